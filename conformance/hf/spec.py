"""What one Hugging Face zoo entry declares: the transformers classes, a tiny config, inputs.

An :class:`HFSpec` names a model class and a config class from ``transformers`` by their
attribute names (looked up when the model is built, so importing the zoo does not import
transformers), the config's keyword arguments (small: two layers, width 32, so a model
builds in milliseconds with random weights and no download), and an input *kind* that
says which example tensors the model's forward takes (:data:`INPUT_KINDS`).

Example::

    >>> spec = HFSpec("bert", "BertForSequenceClassification", "BertConfig", "text-cls", "encoder",
    ...               dict(hidden_size=32))
    >>> spec.family
    'encoder'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

#: Common to the text models: small enough for the float64 reference interpreter.
VOCAB, BATCH, SEQ = 96, 2, 8
IMAGE, CHANNELS = 32, 3
AUDIO_SAMPLES = 1600


@dataclass(frozen=True)
class HFSpec:
    """One architecture of the Hugging Face zoo.

    ``model`` and ``config`` are attribute names in ``transformers``; ``kind`` picks the
    input builder (:data:`INPUT_KINDS`); ``family`` groups the matrix (decoder,
    encoder, encoder-decoder, vision, audio, multimodal). ``settings`` are the config's
    keyword arguments. ``note`` says what the entry covers (GQA, sliding window, MoE...).
    """

    name: str
    model: str
    config: str
    kind: str
    family: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""

    def build(self, seed: int = 0) -> torch.nn.Module:
        """A fresh model with random weights drawn from ``seed``; default attention implementation."""
        import transformers

        config = getattr(transformers, self.config)(**self.settings)
        torch.manual_seed(seed)
        return getattr(transformers, self.model)(config)

    def inputs(self, seed: int = 1) -> dict[str, torch.Tensor]:
        """The forward's keyword arguments, labels included (the model computes its own loss)."""
        generator = torch.Generator().manual_seed(seed)
        return INPUT_KINDS[self.kind](generator, self.settings)


def _ids(g: torch.Generator, vocab: int = VOCAB, shape=(BATCH, SEQ)) -> torch.Tensor:
    return torch.randint(3, vocab, shape, generator=g)


def _mask(shape=(BATCH, SEQ)) -> torch.Tensor:
    # The second sequence is padded at the end: masks are exercised, not all-ones.
    mask = torch.ones(shape, dtype=torch.long)
    mask[1, -2:] = 0
    return mask


def _causal_lm(g, s):
    ids = _ids(g, s.get("vocab_size", VOCAB))
    return {"input_ids": ids, "attention_mask": _mask(), "labels": ids.clone()}


def _masked_lm(g, s):
    ids = _ids(g, s.get("vocab_size", VOCAB))
    return {"input_ids": ids, "attention_mask": _mask(), "labels": ids.clone()}


def _text_cls(g, s):
    return {"input_ids": _ids(g, s.get("vocab_size", VOCAB)), "attention_mask": _mask(),
            "labels": torch.randint(0, 2, (BATCH,), generator=g)}


def _text_cls_unmasked(g, s):
    # FNet's Fourier mixing has no attention mask to pass (its forward would swallow one unused)
    return {"input_ids": _ids(g, s.get("vocab_size", VOCAB)), "labels": torch.randint(0, 2, (BATCH,), generator=g)}


def _seq2seq(g, s):
    vocab = s.get("vocab_size", VOCAB)
    return {"input_ids": _ids(g, vocab), "attention_mask": _mask(), "labels": _ids(g, vocab, (BATCH, SEQ - 2))}


def _image_cls(g, s):
    size = s.get("image_size", IMAGE)
    return {"pixel_values": torch.randn(BATCH, s.get("num_channels", CHANNELS), size, size, generator=g),
            "labels": torch.randint(0, s.get("num_labels", 2), (BATCH,), generator=g)}


def _image_seg(g, s):
    size = s.get("image_size", IMAGE)
    return {"pixel_values": torch.randn(BATCH, CHANNELS, size, size, generator=g),
            "labels": torch.randint(0, s.get("num_labels", 2), (BATCH, size, size), generator=g)}


def _image(g, s):
    size = s.get("image_size", IMAGE)
    return {"pixel_values": torch.randn(BATCH, CHANNELS, size, size, generator=g)}


def _audio_ctc(g, s):
    # Label ids from 1: 0 is the CTC blank/pad id
    return {"input_values": torch.randn(BATCH, AUDIO_SAMPLES, generator=g),
            "labels": torch.randint(1, s.get("vocab_size", 32), (BATCH, 4), generator=g)}


def _whisper(g, s):
    return {"input_features": torch.randn(BATCH, s.get("num_mel_bins", 16), 2 * s["max_source_positions"],
                                          generator=g),
            "labels": _ids(g, s.get("vocab_size", VOCAB), (BATCH, SEQ - 2))}


def _clip(g, s):
    vocab = s["text_config"].get("vocab_size", VOCAB)
    size = s["vision_config"].get("image_size", IMAGE)
    return {"input_ids": _ids(g, vocab), "attention_mask": _mask(),
            "pixel_values": torch.randn(BATCH, CHANNELS, size, size, generator=g), "return_loss": True}


#: Input builders by kind: ``fn(generator, settings) -> forward kwargs``.
INPUT_KINDS: dict[str, Callable[[torch.Generator, Mapping], dict]] = {
    "causal-lm": _causal_lm,
    "masked-lm": _masked_lm,
    "text-cls": _text_cls,
    "text-cls-unmasked": _text_cls_unmasked,
    "seq2seq": _seq2seq,
    "image-cls": _image_cls,
    "image-seg": _image_seg,
    "image": _image,
    "audio-ctc": _audio_ctc,
    "whisper": _whisper,
    "clip": _clip,
}
