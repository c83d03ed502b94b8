"""The Hugging Face zoo: every architecture, with the tiny config it is built from.

One explicit tuple, :data:`ARCHITECTURES`; the order is the matrix's. Configs are kept
small (width 32, two layers, a 96-token vocabulary, 32×32 images) so a forward and
backward of each takes well under a second on CPU, but each keeps what makes its
architecture distinct: grouped-query attention, the RoPE variant, a sliding window,
mixture-of-experts routing, relative position buckets, shifted windows, Fourier mixing,
and so on.

Example::

    >>> from parity.conformance.hf.architectures import ARCHITECTURES
    >>> len(ARCHITECTURES) >= 40
    True
    >>> sorted({spec.family for spec in ARCHITECTURES})
    ['audio', 'decoder', 'encoder', 'encoder-decoder', 'multimodal', 'vision']
"""

from __future__ import annotations

from .spec import HFSpec

# Shared sizes: width 32, 4 heads (2 key/value heads where GQA applies), two layers.
_LM = dict(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
           max_position_embeddings=64, bos_token_id=0, eos_token_id=2)
_GQA = dict(_LM, num_key_value_heads=2)
_BERT = dict(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=64)
_VIT = dict(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=64, num_labels=3)
_SEQ2SEQ = dict(vocab_size=96, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)

ARCHITECTURES: tuple[HFSpec, ...] = (
    # -- decoder LMs ---------------------------------------------------------------------
    HFSpec("llama", "LlamaForCausalLM", "LlamaConfig", "causal-lm", "decoder", _GQA, "GQA, RoPE"),
    HFSpec("llama-rope-scaled", "LlamaForCausalLM", "LlamaConfig", "causal-lm", "decoder",
           dict(_GQA, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 32}),
           "llama3 RoPE scaling"),
    HFSpec("mistral", "MistralForCausalLM", "MistralConfig", "causal-lm", "decoder", dict(_GQA, sliding_window=4),
           "sliding window 4 < sequence"),
    HFSpec("mixtral", "MixtralForCausalLM", "MixtralConfig", "causal-lm", "decoder",
           dict(_GQA, num_local_experts=4, num_experts_per_tok=2, sliding_window=None), "MoE, top-2 of 4 experts"),
    HFSpec("qwen2", "Qwen2ForCausalLM", "Qwen2Config", "causal-lm", "decoder", _GQA, "GQA, qkv bias"),
    HFSpec("qwen2-moe", "Qwen2MoeForCausalLM", "Qwen2MoeConfig", "causal-lm", "decoder",
           dict(_GQA, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                shared_expert_intermediate_size=32), "MoE with a shared expert"),
    HFSpec("qwen3", "Qwen3ForCausalLM", "Qwen3Config", "causal-lm", "decoder", dict(_GQA, head_dim=8),
           "q/k RMSNorm"),
    HFSpec("gemma", "GemmaForCausalLM", "GemmaConfig", "causal-lm", "decoder", dict(_GQA, head_dim=8),
           "GeGLU, scaled embeddings"),
    HFSpec("gemma2", "Gemma2ForCausalLM", "Gemma2Config", "causal-lm", "decoder",
           dict(_GQA, head_dim=8, sliding_window=4), "logit soft-capping, alternating sliding window"),
    HFSpec("phi", "PhiForCausalLM", "PhiConfig", "causal-lm", "decoder", dict(_LM, partial_rotary_factor=0.5),
           "partial rotary, parallel block"),
    HFSpec("phi3", "Phi3ForCausalLM", "Phi3Config", "causal-lm", "decoder", dict(_GQA, pad_token_id=1),
           "fused qkv and gate-up projections"),
    HFSpec("gpt2", "GPT2LMHeadModel", "GPT2Config", "causal-lm", "decoder",
           dict(vocab_size=96, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=2),
           "learned positions, Conv1D"),
    HFSpec("opt", "OPTForCausalLM", "OPTConfig", "causal-lm", "decoder",
           dict(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                max_position_embeddings=64, word_embed_proj_dim=32), "learned offset positions"),
    HFSpec("gpt-neox", "GPTNeoXForCausalLM", "GPTNeoXConfig", "causal-lm", "decoder",
           dict(_LM, rotary_pct=0.25), "parallel residual, partial rotary"),
    HFSpec("gptj", "GPTJForCausalLM", "GPTJConfig", "causal-lm", "decoder",
           dict(vocab_size=96, n_embd=32, n_layer=2, n_head=4, n_positions=64, rotary_dim=4), "interleaved RoPE"),
    HFSpec("falcon", "FalconForCausalLM", "FalconConfig", "causal-lm", "decoder",
           dict(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, new_decoder_architecture=True,
                num_kv_heads=2, alibi=False), "multi-query style, parallel attention"),
    HFSpec("bloom", "BloomForCausalLM", "BloomConfig", "causal-lm", "decoder",
           dict(vocab_size=96, hidden_size=32, n_layer=2, n_head=4), "ALiBi positions"),
    HFSpec("stablelm", "StableLmForCausalLM", "StableLmConfig", "causal-lm", "decoder",
           dict(_GQA, partial_rotary_factor=0.25), "LayerNorm, partial rotary"),
    HFSpec("olmo", "OlmoForCausalLM", "OlmoConfig", "causal-lm", "decoder", _GQA, "non-parametric LayerNorm"),
    HFSpec("gpt-bigcode", "GPTBigCodeForCausalLM", "GPTBigCodeConfig", "causal-lm", "decoder",
           dict(vocab_size=96, n_embd=32, n_layer=2, n_head=4, n_positions=64, multi_query=True), "multi-query"),
    HFSpec("codegen", "CodeGenForCausalLM", "CodeGenConfig", "causal-lm", "decoder",
           dict(vocab_size=96, n_embd=32, n_layer=2, n_head=4, n_positions=64, rotary_dim=4, n_ctx=64),
           "mp-packed qkv"),
    HFSpec("mpt", "MptForCausalLM", "MptConfig", "causal-lm", "decoder",
           dict(vocab_size=96, d_model=32, n_layers=2, n_heads=4, expansion_ratio=2, max_seq_len=64),
           "ALiBi bias cut to the keys by a computed offset"),
    # -- encoders -------------------------------------------------------------------------
    HFSpec("bert", "BertForSequenceClassification", "BertConfig", "text-cls", "encoder", _BERT),
    HFSpec("bert-mlm", "BertForMaskedLM", "BertConfig", "masked-lm", "encoder", _BERT, "tied decoder"),
    HFSpec("roberta", "RobertaForMaskedLM", "RobertaConfig", "masked-lm", "encoder", dict(_BERT, pad_token_id=1),
           "padding-aware positions"),
    HFSpec("distilbert", "DistilBertForSequenceClassification", "DistilBertConfig", "text-cls", "encoder",
           dict(vocab_size=96, dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64)),
    HFSpec("albert", "AlbertForMaskedLM", "AlbertConfig", "masked-lm", "encoder",
           dict(_BERT, embedding_size=16), "factorized embeddings, shared layers"),
    HFSpec("electra", "ElectraForSequenceClassification", "ElectraConfig", "text-cls", "encoder",
           dict(_BERT, embedding_size=16)),
    HFSpec("deberta-v2", "DebertaV2ForSequenceClassification", "DebertaV2Config", "text-cls", "encoder",
           dict(_BERT, relative_attention=True, position_buckets=8, pos_att_type=["p2c", "c2p"]),
           "disentangled relative attention"),
    HFSpec("mpnet", "MPNetForMaskedLM", "MPNetConfig", "masked-lm", "encoder", _BERT, "relative position buckets"),
    HFSpec("longformer", "LongformerForMaskedLM", "LongformerConfig", "masked-lm", "encoder",
           dict(_BERT, attention_window=4, pad_token_id=1),
           "sliding-window attention: overlapping chunks through as_strided, window 4 < sequence"),
    HFSpec("fnet", "FNetForSequenceClassification", "FNetConfig", "text-cls-unmasked", "encoder",
           dict(vocab_size=96, hidden_size=32, num_hidden_layers=2, intermediate_size=64, max_position_embeddings=64),
           "Fourier token mixing: the real part of a 2-d FFT (torch.fft.fftn), complex64"),
    # -- encoder-decoders ---------------------------------------------------------------
    HFSpec("t5", "T5ForConditionalGeneration", "T5Config", "seq2seq", "encoder-decoder",
           dict(vocab_size=96, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, relative_attention_num_buckets=8,
                decoder_start_token_id=0), "relative position buckets, RMSNorm"),
    HFSpec("bart", "BartForConditionalGeneration", "BartConfig", "seq2seq", "encoder-decoder", _SEQ2SEQ),
    HFSpec("marian", "MarianMTModel", "MarianConfig", "seq2seq", "encoder-decoder", _SEQ2SEQ,
           "sinusoidal positions"),
    HFSpec("pegasus", "PegasusForConditionalGeneration", "PegasusConfig", "seq2seq", "encoder-decoder", _SEQ2SEQ,
           "pre-norm, sinusoidal positions"),
    # -- vision ---------------------------------------------------------------------------
    HFSpec("vit", "ViTForImageClassification", "ViTConfig", "image-cls", "vision", _VIT),
    HFSpec("deit", "DeiTForImageClassification", "DeiTConfig", "image-cls", "vision", _VIT, "distillation token"),
    HFSpec("beit", "BeitForImageClassification", "BeitConfig", "image-cls", "vision",
           dict(_VIT, use_relative_position_bias=True), "relative position bias"),
    HFSpec("dinov2", "Dinov2ForImageClassification", "Dinov2Config", "image-cls", "vision",
           dict(_VIT, image_size=32), "layer scale, interpolated positions"),
    HFSpec("swin", "SwinForImageClassification", "SwinConfig", "image-cls", "vision",
           dict(image_size=32, patch_size=2, embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=4,
                num_labels=3), "shifted windows"),
    HFSpec("convnext", "ConvNextForImageClassification", "ConvNextConfig", "image-cls", "vision",
           dict(num_channels=3, num_stages=2, hidden_sizes=[16, 32], depths=[1, 1], num_labels=3), "depthwise 7×7, LayerNorm"),
    HFSpec("resnet", "ResNetForImageClassification", "ResNetConfig", "image-cls", "vision",
           dict(num_channels=3, embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="bottleneck",
                num_labels=3), "BatchNorm, bottleneck"),
    HFSpec("mobilenet-v2", "MobileNetV2ForImageClassification", "MobileNetV2Config", "image-cls", "vision",
           dict(num_channels=3, image_size=32, depth_multiplier=0.25, num_labels=3), "depthwise, ReLU6"),
    HFSpec("segformer", "SegformerForSemanticSegmentation", "SegformerConfig", "image-seg", "vision",
           dict(num_channels=3, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                num_attention_heads=[1, 2], decoder_hidden_size=32, num_labels=3, image_size=32),
           "efficient attention, upsampling decode head"),
    HFSpec("levit", "LevitForImageClassification", "LevitConfig", "image-cls", "vision",
           dict(image_size=32, hidden_sizes=[16, 32, 48], num_attention_heads=[1, 2, 3], depths=[1, 1, 1],
                key_dim=[8, 8, 8], patch_size=16, num_labels=3), "attention biases, hardswish"),
    HFSpec("efficientnet", "EfficientNetForImageClassification", "EfficientNetConfig", "image-cls", "vision",
           dict(num_channels=3, image_size=32, width_coefficient=0.25, depth_coefficient=0.25, hidden_dim=320,
                num_labels=3), "squeeze-and-excitation, SiLU, depthwise"),
    HFSpec("mobilevit", "MobileViTForImageClassification", "MobileViTConfig", "image-cls", "vision",
           dict(num_channels=3, image_size=32, patch_size=2, hidden_sizes=[16, 24, 32],
                neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64], num_attention_heads=2, num_labels=3),
           "convolutions unfolded into patches for attention"),
    # -- audio ------------------------------------------------------------------------------
    HFSpec("wav2vec2", "Wav2Vec2ForCTC", "Wav2Vec2Config", "audio-ctc", "audio",
           dict(vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=16,
                num_conv_pos_embedding_groups=4, do_stable_layer_norm=True, feat_extract_norm="layer",
                ctc_loss_reduction="mean"), "conv feature encoder, CTC loss"),
    HFSpec("hubert", "HubertForCTC", "HubertConfig", "audio-ctc", "audio",
           dict(vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=16,
                num_conv_pos_embedding_groups=4, ctc_loss_reduction="mean"), "group-norm feature encoder"),
    HFSpec("whisper", "WhisperForConditionalGeneration", "WhisperConfig", "whisper", "audio",
           dict(vocab_size=96, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16,
                max_source_positions=16, max_target_positions=32, pad_token_id=1, bos_token_id=0,
                eos_token_id=2, decoder_start_token_id=0), "conv stem, encoder-decoder"),
    # -- multimodal --------------------------------------------------------------------------
    HFSpec("clip", "CLIPModel", "CLIPConfig", "clip", "multimodal",
           dict(text_config=dict(vocab_size=96, bos_token_id=0, eos_token_id=2, pad_token_id=1, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, max_position_embeddings=16),
                vision_config=dict(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64,
                                   num_hidden_layers=2, num_attention_heads=4),
                projection_dim=16), "contrastive loss, quick-GELU"),
)


def get_architecture(name: str) -> HFSpec:
    """The zoo entry called ``name``; the error lists the zoo."""
    for spec in ARCHITECTURES:
        if spec.name == name:
            return spec
    raise KeyError(f"no Hugging Face zoo entry named {name!r}; the zoo has "
                   f"{', '.join(s.name for s in ARCHITECTURES)}")
