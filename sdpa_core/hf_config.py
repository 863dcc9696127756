"""A Hugging Face ``config.json`` read the way the model's own attention code reads it: the head's factor on
q . k, its soft-cap, QK-norm and position temperature, and its spread at initialisation.

:func:`parse_config` turns untrusted text into a dict (size, depth and NaN/Infinity checked);
:func:`read_config` picks the fields that set one head's scale and says, for each, what it does and which
``transformers`` modelling file reads it (:class:`ConfigHead`); :func:`config_at_init` gives that head at
initialisation (``real_models.head_at_init``). Every error is a :class:`ConfigError` (a ValueError) whose
message names the field and what to change. ``hf_published.PUBLISHED`` holds published models' configs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from . import real_models, scaling

__all__ = [
    "ConfigError",
    "ConfigHead",
    "Field",
    "ARCHITECTURES",
    "parse_config",
    "read_config",
    "config_at_init",
    "temperature_at",
    "to_link",
    "MAX_CONFIG_BYTES",
    "MAX_DEPTH",
]

#: A config.json of a real model is a few kB; Llama 4's with its text and vision parts ~3 kB.
MAX_CONFIG_BYTES = 100_000
#: Objects and lists nested deeper than this are refused (a real config nests 3 deep: text_config.rope_scaling).
MAX_DEPTH = 6
#: initializer_range when the file leaves it out: every architecture below defaults to 0.02.
DEFAULT_INIT = 0.02


class ConfigError(ValueError):
    """A config the page cannot read, with a message that says which field and what to change."""


#: model_type -> (architecture's name, the modelling file that reads its attention fields, how it scales).
ARCHITECTURES = {
    "gpt2": ("GPT-2", "gpt2", "plain"),
    "llama": ("Llama", "llama", "plain"),
    "mistral": ("Mistral", "mistral", "plain"),
    "mixtral": ("Mixtral", "mixtral", "plain"),  # MixtralAttention: Mistral's, head_dim ** -0.5
    "qwen2": ("Qwen2", "qwen2", "plain"),
    "qwen3": ("Qwen3", "qwen3", "qk_norm"),
    "olmo2": ("OLMo 2", "olmo2", "qk_norm_all"),
    "granite": ("Granite", "granite", "multiplier"),
    "granitemoe": ("Granite MoE", "granitemoe", "multiplier"),  # GraniteMoeAttention: config.attention_multiplier
    "gemma2": ("Gemma 2", "gemma2", "pre_attn"),
    "gemma3_text": ("Gemma 3", "gemma3", "pre_attn"),
    "llama4_text": ("Llama 4", "llama4", "temperature"),
    "deepseek_v3": ("DeepSeek-V3", "deepseek_v3", "mla"),
}
#: Multimodal configs whose attention fields sit in ``text_config``.
WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text"}


@dataclass(frozen=True)
class Field:
    """One field the page read: its name in config.json, its value, what it does to the head, who reads it."""

    name: str
    value: object
    meaning: str
    source: str
    given: bool = True  # False: not in the file, the config class's default


@dataclass(frozen=True)
class ConfigHead:
    """One attention head as a config sets it.

    ``factor``: what the model's code multiplies q . k by (at positions where any temperature is 1);
    ``formula``: how it came about, in words; ``softcap``: c of ``c tanh(z / c)`` or None; ``qk_norm``: one of
    ``real_models.QK_NORMS``; ``norm_width``, ``k_norm_width``: the coordinates a whole-projection QK-norm of q
    and of k runs over (OLMo 2: all query heads, all key heads);
    ``temperature``: (floor_scale, attn_scale) of Llama 4's position temperature, or None; ``q_std``,
    ``k_std``: the std of W_q's and W_k's entries seen from the normalised input (MLA's low-rank paths folded
    in); ``fields``: what was read; ``ignored``: the file's other top-level fields; ``notes``: conditions.
    """

    model_type: str
    architecture: str
    d_model: int
    heads: int
    kv_heads: int
    d_k: int
    factor: float
    formula: str
    softcap: float | None
    qk_norm: str
    norm_width: int
    k_norm_width: int
    temperature: tuple[float, float] | None
    init_std: float
    q_std: float
    k_std: float
    fields: tuple[Field, ...]
    ignored: tuple[str, ...]
    notes: tuple[str, ...]
    source: str

    @property
    def sqrt_d_model_bug(self) -> bool:
        """True when the factor is 1/sqrt(d_model) (dividing by the model's width, not the head's)."""
        return self.d_model != self.d_k and math.isclose(self.factor, self.d_model**-0.5, rel_tol=1e-9)


# ---- reading untrusted text --------------------------------------------------------------------------
def parse_config(text) -> dict:
    """A config.json's text (str or bytes) as a dict, or a :class:`ConfigError` saying what is wrong: over
    :data:`MAX_CONFIG_BYTES`, not UTF-8, not JSON (with the line and column), NaN or Infinity (not JSON, though
    Python writes them), nested deeper than :data:`MAX_DEPTH`, or not an object at the top."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"The file is {len(text):,} bytes; a config.json is a few kB, and the page reads at "
                f"most {MAX_CONFIG_BYTES:,}."
            )
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ConfigError("The file is not UTF-8 text: is it a config.json?") from None
    if not isinstance(text, str):
        raise ConfigError(f"A config must be text, got {type(text).__name__}.")
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write first: not part of the JSON
    if len(text.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
        raise ConfigError(f"The text is over {MAX_CONFIG_BYTES:,} bytes; a config.json is a few kB.")
    if not text.strip():
        raise ConfigError("The config is empty: paste the text of a config.json, or drop the file.")
    _depth_guard(text)

    def constant(name):
        raise ConfigError(
            f"The config holds {name}, which is not JSON (Python writes it, JSON readers refuse it); give a number."
        )

    try:
        obj = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as e:
        raise ConfigError(f"Not valid JSON at line {e.lineno}, column {e.colno}: {e.msg}.") from None
    except ConfigError:  # NaN or Infinity, said by parse_constant
        raise
    except ValueError:  # a whole number of more than 4,300 digits (Python's limit on int from text)
        raise ConfigError("The config holds a number too long to read (over 4,300 digits).") from None
    except RecursionError:
        raise ConfigError(f"The config nests deeper than {MAX_DEPTH} levels; a config.json nests at most 3.") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"A config.json is one JSON object {{...}}; this is a {type(obj).__name__}.")
    return obj


def _depth_guard(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before json builds it (brackets inside strings are skipped)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(f"The config nests deeper than {MAX_DEPTH} levels; a config.json nests at most 3.")
        elif ch in "]}":
            depth -= 1


# ---- typed fields ------------------------------------------------------------------------------------
def _kind(value) -> str:
    return {bool: "true/false", str: "text", list: "a list", dict: "an object", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _whole(cfg: dict, name: str, low: int, high: int) -> int:
    v = cfg[name]
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{name} must be a whole number, got {_kind(v)} {_cut(json.dumps(v))}.")
    if not low <= v <= high:
        raise ConfigError(f"{name} must be in [{low}, {high:,}], got {_cut(f'{v:,}')}.")
    return v


def _cut(text: str, most: int = 40) -> str:
    """A value as an error message echoes it: at most ``most`` characters, and how long it was when cut."""
    return text if len(text) <= most else f"{text[:most]}… ({len(text):,} characters)"


def _number(cfg: dict, name: str, low: float, high: float, *, open_low: bool = True) -> float:
    v = cfg[name]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{name} must be a number, got {_kind(v)} {_cut(json.dumps(v))}.")
    try:
        v = float(v)
    except OverflowError:  # a whole number beyond float's range
        raise ConfigError(f"{name} is far too large: it must be ≤ {high:g}.") from None
    if not math.isfinite(v) or v > high or v < low or (open_low and v == low):
        raise ConfigError(f"{name} must be {'>' if open_low else '≥'} {low:g} and ≤ {high:g}, got {v:g}.")
    return v


def _flag(cfg: dict, name: str) -> bool:
    v = cfg[name]
    if isinstance(v, bool):
        return v
    if isinstance(v, int):  # Llama 4's first configs wrote attn_temperature_tuning as 4: the code tests truth
        return v != 0
    raise ConfigError(f"{name} must be true or false, got {_kind(v)} {_cut(json.dumps(v))}.")


# ---- reading one architecture ------------------------------------------------------------------------
def read_config(cfg) -> ConfigHead:
    """The head a parsed config sets (see :class:`ConfigHead`), read as ``transformers``' modelling code of
    its ``model_type`` reads it; a :class:`ConfigError` for a field of the wrong type or out of range, a missing
    field the code needs, or an architecture the page does not model (naming what it would ignore)."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"A config is a JSON object, got {_kind(cfg)}.")
    top = cfg
    model_type = cfg.get("model_type")
    if isinstance(model_type, str) and model_type in WRAPPERS:
        inner = cfg.get("text_config")
        if not isinstance(inner, dict):
            raise ConfigError(
                f"A {model_type} config keeps its attention fields in text_config, an object; "
                f"this one has {_kind(inner)}."
            )
        cfg = {"model_type": WRAPPERS[model_type], **inner}
        cfg["model_type"] = inner.get("model_type", WRAPPERS[model_type])
        model_type = cfg["model_type"]
        if not isinstance(model_type, str) or model_type != WRAPPERS[top["model_type"]]:
            raise ConfigError(
                f"text_config.model_type must be {WRAPPERS[top['model_type']]!r} in a {top['model_type']} config."
            )
    if not isinstance(model_type, str):
        raise ConfigError(
            "The config has no model_type (text), so the page cannot tell which attention code reads "
            f"it; it models {', '.join(sorted(ARCHITECTURES))}."
        )
    if model_type not in ARCHITECTURES:
        found = [k for k in SCALE_FIELDS if k in cfg]
        raise ConfigError(
            f"model_type {json.dumps(model_type)[:40]} is not one the page models; it models "
            f"{', '.join(sorted(ARCHITECTURES))}. Nothing was read"
            + (f": its fields {', '.join(found)} were ignored." if found else ".")
            + _caps_named(cfg)
        )
    architecture, module, how = ARCHITECTURES[model_type]
    source = f"transformers/models/{module}/modeling_{module}.py"
    fields: list[Field] = []
    notes: list[str] = []

    def need(name: str) -> None:
        if name not in cfg or cfg[name] is None:
            raise ConfigError(
                f"{name} is missing: {architecture}'s attention ({source}) reads it, and the page does not guess it."
            )

    def record(name: str, value, meaning: str, given: bool = True) -> None:
        fields.append(Field(name, value, meaning, source, given))

    if model_type == "gpt2":
        for a, b in (("hidden_size", "n_embd"), ("num_attention_heads", "n_head")):
            if a not in cfg and b in cfg:
                cfg = {**cfg, a: cfg[b]}
    need("hidden_size")
    need("num_attention_heads")
    d_model = _whole(cfg, "hidden_size", 1, real_models.MAX_D_MODEL)
    heads = _whole(cfg, "num_attention_heads", 1, 4096)
    record(
        "hidden_size" if "hidden_size" in top or model_type != "gpt2" else "n_embd",
        d_model,
        "d_model: the width of each token, whose entries feed q and k",
    )
    record(
        "num_attention_heads" if "num_attention_heads" in top or model_type != "gpt2" else "n_head",
        heads,
        "heads: the query heads per layer",
    )
    kv_heads = heads
    if cfg.get("num_key_value_heads") is not None and model_type != "gpt2":
        kv_heads = _whole(cfg, "num_key_value_heads", 1, heads)
        if heads % kv_heads:
            raise ConfigError(
                f"num_key_value_heads ({kv_heads}) must divide num_attention_heads ({heads}): each "
                f"key head serves a whole group of query heads."
            )
        record(
            "num_key_value_heads",
            kv_heads,
            f"key heads: each serves {heads // kv_heads} query head(s) (grouped "
            "query attention); a key's scale is the same",
        )
    if cfg.get("initializer_range") is not None:
        init_std = _number(cfg, "initializer_range", real_models.STD_RANGE[0], real_models.STD_RANGE[1])
        record("initializer_range", init_std, "the std of W_q's and W_k's entries at initialisation (_init_weights)")
    else:
        init_std = DEFAULT_INIT
        record(
            "initializer_range",
            init_std,
            "the std of W_q's and W_k's entries at initialisation: not in the file, the config class's default",
            given=False,
        )

    for part in _rope_parts(cfg)[1]:
        _refuse_rope_attention_factor(part, _rope_parts(cfg)[0])
    common = dict(
        model_type=model_type,
        architecture=architecture,
        d_model=d_model,
        heads=heads,
        kv_heads=kv_heads,
        init_std=init_std,
        source=source,
    )
    if how == "mla":
        mla = _read_mla(cfg, d_model, init_std, source, fields, need, record)
        return _head(top, fields, softcap=None, qk_norm="none", temperature=None, **common, **mla)

    if cfg.get("head_dim") is not None and model_type != "gpt2":  # GPT2Attention: always n_embd // n_head
        d_k = _whole(cfg, "head_dim", 1, 4096)
        record("head_dim", d_k, "d_k: each head's q and k width, set apart from hidden_size / heads")
    elif model_type in HEAD_DIM_DEFAULTS:
        d_k = HEAD_DIM_DEFAULTS[model_type]
        record(
            "head_dim",
            d_k,
            f"d_k: each head's q and k width; not in the file, so the config class's default "
            f"({d_k}), whatever hidden_size / heads is",
            given=False,
        )
    elif how in ("pre_attn", "temperature"):
        need("head_dim")
        d_k = 0  # unreachable: need raised
    else:
        if d_model % heads:
            raise ConfigError(
                f"num_attention_heads ({heads}) does not divide hidden_size ({d_model}) and there is "
                f"no head_dim: {architecture}'s d_k is hidden_size / num_attention_heads, which must be "
                f"whole."
            )
        d_k = d_model // heads
    if d_model > heads * d_k * 64 or heads * d_k > d_model * 64:
        raise ConfigError(
            f"heads × head_dim = {heads * d_k:,} is far from hidden_size = {d_model:,} (more than 64× "
            f"apart): check num_attention_heads and head_dim."
        )

    factor, formula, softcap, qk_norm, temperature = d_k**-0.5, f"1/√head_dim = 1/√{d_k}", None, "none", None
    norm_width = k_norm_width = heads * d_k
    if how == "plain" and model_type == "gpt2":
        if "scale_attn_weights" in cfg and not _flag(cfg, "scale_attn_weights"):
            factor, formula = 1.0, "1 (scale_attn_weights is false)"
            record("scale_attn_weights", False, "false: q·k is not divided by √d_k")
        if "scale_attn_by_inverse_layer_idx" in cfg and _flag(cfg, "scale_attn_by_inverse_layer_idx"):
            record("scale_attn_by_inverse_layer_idx", True, "layer L also divides q·k by L: the first layer is shown")
            notes.append("Layer L divides q·k by L as well (scale_attn_by_inverse_layer_idx): this is layer 1.")
    elif how == "qk_norm":
        qk_norm = "head"
        notes.append(
            f"{architecture} normalises each head's q and k (RMSNorm over head_dim) before the scale: "
            "at initialisation their entries have rms 1."
        )
    elif how == "qk_norm_all":
        qk_norm = "all"
        k_norm_width = kv_heads * d_k  # Olmo2Attention: k_norm = Olmo2RMSNorm(num_key_value_heads * head_dim)
        notes.append(
            f"{architecture} normalises q and k over all heads at once (RMSNorm over {heads} × {d_k} = "
            f"{heads * d_k} coordinates for q, {kv_heads} × {d_k} = {k_norm_width} for k) before "
            "splitting them into heads."
        )
    elif how == "multiplier":
        need("attention_multiplier")
        factor = _number(cfg, "attention_multiplier", 0.0, 1e3)
        formula = f"attention_multiplier = {factor:g}"
        record("attention_multiplier", factor, "the factor on q·k itself, in place of 1/√head_dim (muP sets it)")
    elif how == "pre_attn":
        need("query_pre_attn_scalar")
        scalar = _number(cfg, "query_pre_attn_scalar", 0.0, 1e9)
        factor, formula = scalar**-0.5, f"query_pre_attn_scalar^-½ = 1/√{scalar:g}"
        record("query_pre_attn_scalar", scalar, "q·k is multiplied by its -½ power, in place of 1/√head_dim")
        given_cap = "attn_logit_softcapping" in cfg
        cap = cfg["attn_logit_softcapping"] if given_cap else SOFTCAP_DEFAULTS.get(model_type)
        if cap is not None:
            softcap = _number({"attn_logit_softcapping": cap}, "attn_logit_softcapping", 0.0, 1e6)
            record("attn_logit_softcapping", softcap, "the logits become c·tanh(z / c): none passes ±c", given_cap)
        elif given_cap:
            record("attn_logit_softcapping", None, "null: the logits are not capped")
        if model_type == "gemma3_text":
            qk_norm = "head"
            notes.append(
                "Gemma 3 normalises each head's q and k (RMSNorm, gain 1 + w with w = 0 at "
                "initialisation) before the scale."
            )
    elif how == "temperature":
        # Llama4TextConfig's defaults (configuration_llama4.py): tuning on, floor_scale 8192, attn_scale 0.1
        given = {k: k in cfg and cfg[k] is not None for k in LLAMA4_DEFAULTS}
        cfg = {**cfg, **{k: v for k, v in LLAMA4_DEFAULTS.items() if not given[k]}}
        tuning = _flag(cfg, "attn_temperature_tuning")
        if tuning:
            floor_scale = _number(cfg, "floor_scale", scaling.LLAMA4_MIN_FLOOR_SCALE, 1e9, open_low=False)
            attn_scale = _number(cfg, "attn_scale", 0.0, 10.0, open_low=False)
            temperature = (floor_scale, attn_scale)
            record(
                "attn_temperature_tuning",
                cfg["attn_temperature_tuning"],
                "on: the layers without RoPE multiply q by a temperature that grows with the log of the position",
                given["attn_temperature_tuning"],
            )
            record(
                "floor_scale", floor_scale, "the temperature steps up every floor_scale positions", given["floor_scale"]
            )
            record(
                "attn_scale",
                attn_scale,
                "the temperature is 1 + attn_scale · ln(1 + ⌊(p + 1) / floor_scale⌋)",
                given["attn_scale"],
            )
            record(
                "use_qk_norm",
                _flag(cfg, "use_qk_norm"),
                "the layers with RoPE normalise each head's q and k (L2Norm); this layer, without RoPE, does not",
                given["use_qk_norm"],
            )
            notes.append(
                "This is a layer without RoPE (every 4th by default: no_rope_layers 1, 1, 1, 0, …), where "
                "the temperature acts; the other layers use RoPE"
                + (" and normalise each head's q and k (L2Norm: rms 1, no gain)" if _flag(cfg, "use_qk_norm") else "")
                + " instead."
            )
        else:
            record(
                "attn_temperature_tuning",
                cfg["attn_temperature_tuning"],
                "off: no layer has a position temperature",
                given["attn_temperature_tuning"],
            )
            qk = _flag(cfg, "use_qk_norm")
            qk_norm = "head" if qk else "none"
            record(
                "use_qk_norm",
                qk,
                "the RoPE layers normalise each head's q and k (L2Norm: rms 1)"
                if qk
                else "off: q and k are not normalised",
                given["use_qk_norm"],
            )
            notes.append(
                "The temperature tuning is off: every position has factor 1/√head_dim. This is a layer with RoPE."
            )
    elif how != "plain":
        # a kind added to ARCHITECTURES without its branch here: never read it as 1/√head_dim in silence
        raise NotImplementedError(f"read_config has no branch for {model_type!r}'s kind of scaling {how!r}")
    return _head(
        top,
        fields,
        d_k=d_k,
        factor=float(factor),
        formula=formula,
        softcap=softcap,
        qk_norm=qk_norm,
        norm_width=norm_width,
        k_norm_width=k_norm_width,
        temperature=temperature,
        q_std=init_std,
        k_std=init_std,
        notes=tuple(notes),
        **common,
    )


def _head(top: dict, fields: list, **values) -> ConfigHead:
    """The ConfigHead of ``values``, with the fields read and the file's other top-level fields (``ignored``);
    a ConfigError when the head is beyond what the page draws (its factor, its W stds, its norm's width)."""
    if values["factor"] > MAX_FACTOR:
        raise ConfigError(
            f"The head's factor on q·k, {values['formula']}, is {values['factor']:.3g}: over "
            f"{MAX_FACTOR:g}, which the page does not draw."
        )
    low, high = real_models.STD_RANGE
    for side in ("q", "k"):
        std = values[f"{side}_std"]
        if not low <= std <= high:
            raise ConfigError(
                f"initializer_range = {values['init_std']:g} gives W_{side} entries of std {std:.3g} "
                f"(as the page folds the model's paths in), outside [{low:g}, {high:g}]."
            )
    if values["qk_norm"] == "all" and values["norm_width"] > 4 * real_models.MAX_D_MODEL:
        raise ConfigError(
            f"heads × head_dim = {values['norm_width']:,}: over {4 * real_models.MAX_D_MODEL:,}, "
            f"the widest QK-norm the page draws."
        )
    read = {f.name.split(".")[0] for f in fields} | {"model_type", "text_config", "n_embd", "n_head"}
    return ConfigHead(fields=tuple(fields), ignored=tuple(k for k in top if k not in read), **values)


def _read_mla(cfg, d_model, init_std, source, fields, need, record) -> dict:
    """DeepSeek-V3's multi-head latent attention: q and k go through low-rank paths with an RMSNorm inside.
    Returns the ConfigHead values it sets (d_k, factor, formula, norm_width, q_std, k_std, notes)."""
    for name in ("qk_nope_head_dim", "qk_rope_head_dim", "kv_lora_rank"):
        need(name)
    nope = _whole(cfg, "qk_nope_head_dim", 0, 4096)
    rope = _whole(cfg, "qk_rope_head_dim", 0, 4096)
    kv_rank = _whole(cfg, "kv_lora_rank", 1, real_models.MAX_D_MODEL)
    d_k = nope + rope
    if not 1 <= d_k <= 4096:
        raise ConfigError(f"qk_nope_head_dim + qk_rope_head_dim must be in [1, 4096], got {d_k}.")
    record("qk_nope_head_dim", nope, "the part of each head's q and k without position rotation")
    record("qk_rope_head_dim", rope, "the part with RoPE; its key is shared by all heads")
    record("kv_lora_rank", kv_rank, "keys come from a normalised latent of this width (kv_a_layernorm)")
    q_rank = None
    if cfg.get("q_lora_rank") is not None:
        q_rank = _whole(cfg, "q_lora_rank", 1, real_models.MAX_D_MODEL)
        record("q_lora_rank", q_rank, "queries come from a normalised latent of this width (q_a_layernorm)")
    factor, formula = d_k**-0.5, f"1/√(qk_nope_head_dim + qk_rope_head_dim) = 1/√{d_k}"
    spelling, parts = _rope_parts(cfg)
    rs = parts[0] if parts else None
    if rs is not None:
        mscale_all = rs.get("mscale_all_dim", 0)
        if mscale_all:
            if "factor" not in rs:
                raise ConfigError(f"{spelling}.factor is missing: with mscale_all_dim the scale depends on it.")
            ext = _number(rs, "factor", 0.0, 1e6)
            m_all = _number(rs, "mscale_all_dim", 0.0, 100.0)
            mscale = 1.0 if ext <= 1 else 0.1 * m_all * math.log(ext) + 1.0
            factor *= mscale * mscale
            formula += (
                f" × mscale² = × {mscale:.4g}² (YaRN: 0.1 · {m_all:g} · ln {ext:g} + 1)"
                if ext > 1
                else " × mscale² = × 1 (YaRN's factor ≤ 1: mscale 1)"
            )
            fields.append(Field(f"{spelling}.factor", ext, "how many times the context was extended (YaRN)", source))
            fields.append(
                Field(
                    f"{spelling}.mscale_all_dim",
                    m_all,
                    "the scale gains mscale² = (0.1 · mscale_all_dim · ln factor + 1)²",
                    source,
                )
            )
    # the normalised input x has rms 1: a latent c = norm(x W_a) has rms 1, so q = c W_b has entries of std
    # sqrt(rank) init_std; the rotated key part comes straight from x (no norm), std sqrt(d_model) init_std
    q_entry = math.sqrt(q_rank if q_rank else d_model) * init_std
    k_entry = math.sqrt((nope * kv_rank + rope * d_model) / d_k) * init_std
    notes = (
        "MLA's queries and keys come through low-rank paths with an RMSNorm inside: the page draws a head of "
        f"d_k = {d_k} whose q and k entries have those paths' std at initialisation (q {q_entry:.3g}, k "
        f"{k_entry:.3g} in rms), not the paths themselves.",
    )
    return dict(
        d_k=d_k,
        factor=float(factor),
        formula=formula,
        norm_width=d_k,
        k_norm_width=d_k,
        q_std=q_entry / math.sqrt(d_model),
        k_std=k_entry / math.sqrt(d_model),
        notes=notes,
    )


#: attn_logit_softcapping when the file has none (Gemma2Config's default; an explicit null means no cap).
SOFTCAP_DEFAULTS = {"gemma2": 50.0}
#: The bounds ``real_models.head_at_init`` holds a head to, checked here so a ConfigError names the field.
MAX_FACTOR = 1e3

#: head_dim when the file has none, where the config class sets a default of its own (configuration_qwen3.py).
HEAD_DIM_DEFAULTS = {"qwen3": 128}
#: Llama4TextConfig's defaults for the temperature (configuration_llama4.py).
LLAMA4_DEFAULTS = {"attn_temperature_tuning": True, "floor_scale": 8192, "attn_scale": 0.1, "use_qk_norm": True}

#: Every field any architecture above reads (named when an unknown architecture's are ignored).
#: Fields that cap the attention logits in model code the page does not model, and how that code uses them
#: (Grok-1's remote code: attn_output_multiplier times q.k, then max_attn_value * tanh(. / max_attn_value)).
CAP_FIELDS = {
    "attn_output_multiplier": "q·k is multiplied by {v:g}",
    "max_attn_value": "the logits are capped at ±{v:g} (c·tanh(z / c), c = {v:g})",
    "attn_logit_softcapping": "the logits are capped at ±{v:g} (c·tanh(z / c), c = {v:g})",
}


def _caps_named(cfg: dict) -> str:
    """A refused config's logit cap (and the factor before it), said: the reader should know the model has one."""
    said = []
    for name, text in CAP_FIELDS.items():
        v = cfg.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            said.append(f"{name} = {v:g}: " + text.format(v=v))
    caps = any(name != "attn_output_multiplier" for name in CAP_FIELDS if name in cfg)
    return (f" Its attention{' caps its logits' if caps else ''}: " + "; then ".join(said) + ".") if said else ""


SCALE_FIELDS = (
    "hidden_size",
    "num_attention_heads",
    "head_dim",
    "num_key_value_heads",
    "query_pre_attn_scalar",
    "attn_logit_softcapping",
    "attention_multiplier",
    "use_qk_norm",
    "attn_temperature_tuning",
    "floor_scale",
    "attn_scale",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "q_lora_rank",
    "kv_lora_rank",
    "rope_scaling",
    "rope_parameters",
    "initializer_range",
    "n_embd",
    "n_head",
    "scale_attn_weights",
)


#: The two spellings of RoPE's scaling in a config.json: transformers < 5 writes ``rope_scaling``, transformers >= 5
#: ``rope_parameters`` (the same keys, with ``rope_theta`` beside them; per layer type, {"full_attention": {...},
#: "sliding_attention": {...}}, where a model has two).
ROPE_SPELLINGS = ("rope_scaling", "rope_parameters")


def _rope_parts(cfg: dict) -> tuple[str, list[dict]]:
    """``(the spelling the config uses, its RoPE parameter objects)``: one object, or one per layer type."""
    for spelling in ROPE_SPELLINGS:
        rs = cfg.get(spelling)
        if rs is None:
            continue
        if not isinstance(rs, dict):
            raise ConfigError(f"{spelling} must be an object or null, got {_kind(rs)}.")
        per_layer = [v for v in rs.values() if isinstance(v, dict)]
        if per_layer and not ({"rope_type", "type", "factor"} & set(rs)):
            return spelling, per_layer
        return spelling, [rs]
    return ROPE_SPELLINGS[0], []


def _refuse_rope_attention_factor(rs, spelling: str = "rope_scaling") -> None:
    """YaRN and LongRoPE (transformers' modeling_rope_utils) multiply RoPE's cos and sin by an attention factor,
    which scales the logits of the rotated coordinates: the page does not model that, so it refuses such a config
    rather than show a head without it. YaRN's factor is 1 when its scale is <= 1, or when mscale and
    mscale_all_dim are both set and equal (DeepSeek-V3's published config: 1.0 and 1.0)."""
    if not isinstance(rs, dict):
        return
    kind = rs.get("rope_type", rs.get("type"))
    if kind not in ("yarn", "longrope"):
        return
    explicit = rs.get("attention_factor")
    scale = rs.get("factor", 1)
    plain = isinstance(scale, (int, float)) and not isinstance(scale, bool) and scale <= 1
    m, m_all = rs.get("mscale"), rs.get("mscale_all_dim")
    if explicit == 1 or (explicit is None and kind == "yarn" and (plain or (m and m_all and m == m_all))):
        return
    raise ConfigError(
        f"{spelling} ({kind}) multiplies RoPE's rotated coordinates of q and k by an attention "
        f"factor, which the page does not model; without {spelling} it shows the head as trained "
        f"before the context was extended."
    )


def temperature_at(head: ConfigHead, position) -> float:
    """Llama 4's factor on q at 0-based ``position`` (1 where the config sets no temperature):
    ``1 + attn_scale ln(1 + floor((position + 1) / floor_scale))``."""
    if not isinstance(head, ConfigHead):
        raise TypeError(f"head must be a ConfigHead from read_config, got {type(head).__name__}")
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < scaling.MAX_N:
        raise ValueError(f"position must be a whole number from 0 to {scaling.MAX_N - 1}, got {position!r}")
    if head.temperature is None:
        return 1.0
    floor_scale, attn_scale = head.temperature
    return scaling.llama4_temperature(position + 1, floor_scale=floor_scale, attn_scale=attn_scale)


def config_at_init(head: ConfigHead, *, n=128, samples=8, seed=0) -> dict:
    """``real_models.head_at_init`` for the head a config sets: its d_k, factor, soft-cap and QK-norm, W_q and
    W_k ~ N(0, initializer_range²) on normalised tokens (rms 1 per feature, as after the block's RMSNorm)."""
    if not isinstance(head, ConfigHead):
        raise TypeError(f"head must be a ConfigHead from read_config, got {type(head).__name__}")
    return real_models.head_at_init(
        head.d_model,
        head.heads,
        d_k=head.d_k,
        q_std=head.q_std,
        k_std=head.k_std,
        qk_norm=head.qk_norm,
        factor=head.factor,
        softcap=head.softcap,
        norm_width=head.norm_width if head.qk_norm == "all" else None,
        k_norm_width=head.k_norm_width if head.qk_norm == "all" else None,
        n=n,
        samples=samples,
        seed=seed,
    )


def to_link(head: ConfigHead) -> str:
    """The fields that were read, as compact JSON: what a link carries to rebuild the same head."""
    out: dict = {"model_type": head.model_type}
    for f in head.fields:
        if not f.given:
            continue
        name = {"n_embd": "hidden_size", "n_head": "num_attention_heads"}.get(f.name, f.name)
        if "." in name:
            outer, inner = name.split(".", 1)
            out.setdefault(outer, {})[inner] = f.value
        else:
            out[name] = f.value
    return json.dumps(out, separators=(",", ":"))
