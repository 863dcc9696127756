"""The page's two colour sets (web/theme.py), checked as numbers: every text colour against every
background it is drawn on reaches WCAG's 4.5:1 in light and in dark, the plots' lines and markers 3:1
(non-text contrast, WCAG 1.4.11), and the CSS and the figures' script carry exactly these sets.
The browser test (test_ui_dark.py) measures what the page actually shows; this one says which pair
fails when a colour is changed."""
import json
import re

import pytest

from web import dark_figures
from web.theme import (CSS, DARK, DARK_DATA, DTYPE_COLORS, FIGURE_DARK, FIGURE_LIGHT, LIGHT, MARK_COLOR, OKABE_ITO,
                       RULE_COLORS, TEMPLATE_CSS, THEORY_COLOR, WARN_TEXT)


def luminance(colour: str) -> float:
    """WCAG 2.x relative luminance of a #rrggbb colour."""
    assert re.fullmatch(r"#[0-9a-fA-F]{6}", colour), colour
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_contrast_formula_on_known_pairs():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    assert contrast("#ffffff", "#ffffff") == pytest.approx(1.0)


#: The page's own colours (--sdpa-*), read from web/theme.py: a name ending in -bg is a background, every other
#: one a text colour, checked on every background, unless it is listed here: drawn only on its own background
#: (the preview badge), a focus ring (non-text: 3:1), or a table's divider (decorative: no minimum).
OWN_BACKGROUND = {"--sdpa-mark-fg": "--sdpa-mark-bg"}
NON_TEXT = {"--sdpa-focus": 3.0, "--sdpa-rule-line": None}
BACKGROUNDS = [v for v in LIGHT if v.startswith("--sdpa-") and v.endswith("-bg") and v not in OWN_BACKGROUND.values()]
TEXTS = [v for v in LIGHT if v.startswith("--sdpa-") and v not in BACKGROUNDS and v not in OWN_BACKGROUND.values()
         and v not in OWN_BACKGROUND and v not in NON_TEXT]


def test_the_colour_roles_cover_every_page_colour():
    own = [v for v in LIGHT if v.startswith("--sdpa-")]
    assert own == [v for v in DARK if v.startswith("--sdpa-")]      # the same colours in both sets
    assert sorted(own) == sorted({*TEXTS, *BACKGROUNDS, *OWN_BACKGROUND, *OWN_BACKGROUND.values(), *NON_TEXT})
    assert {"--sdpa-text", "--sdpa-link", "--sdpa-bg", "--sdpa-card-bg"} <= {*TEXTS, *BACKGROUNDS}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_text_colour_reads_on_every_page_background(scheme):
    colours = {"light": LIGHT, "dark": DARK}[scheme]
    pairs = [(t, b, 4.5) for t in TEXTS for b in BACKGROUNDS]
    pairs += [(t, b, 4.5) for t, b in OWN_BACKGROUND.items()]
    pairs += [(t, b, need) for t, need in NON_TEXT.items() if need is not None for b in BACKGROUNDS]
    low = [(t, b, round(contrast(colours[t], colours[b]), 2)) for t, b, need in pairs
           if contrast(colours[t], colours[b]) < need]
    assert low == []


def test_panel_design_variables_pair_text_with_its_background_in_dark():
    for surface in ("background", "surface", "secondary"):
        text, bg = DARK[f"--design-{surface}-text-color"], DARK[f"--design-{surface}-color"]
        assert contrast(text, bg) >= 4.5, surface
    # the page's background is Panel's background
    assert DARK["--design-background-color"] == DARK["--sdpa-bg"]


def test_the_plots_text_and_data_read_on_their_background():
    bg = FIGURE_DARK["background"]
    assert contrast(FIGURE_DARK["text"], bg) >= 4.5 and contrast(FIGURE_DARK["soft"], bg) >= 4.5
    assert contrast(FIGURE_DARK["axis"], bg) >= 3
    # text drawn on the plot (the float16 label) in both
    assert contrast(WARN_TEXT, FIGURE_LIGHT["background"]) >= 4.5
    assert contrast(DARK_DATA[WARN_TEXT], bg) >= 4.5
    # every colour a line or marker can have, as the reader sees it in dark: 3:1 (WCAG 1.4.11). (In light,
    # Okabe-Ito's sky and orange are 2.3:1 on white; the dash patterns and markers carry the distinction.)
    data = {*RULE_COLORS.values(), *DTYPE_COLORS.values(), THEORY_COLOR, MARK_COLOR, OKABE_ITO["black"]}
    assert [c for c in data if contrast(DARK_DATA.get(c, c), bg) < 3] == []


def test_the_css_and_the_script_carry_the_colour_sets():
    # light on :root, dark under the reader's preference, every variable of both
    light_block, dark_block = TEMPLATE_CSS.split("@media (prefers-color-scheme: dark)", 1)
    for name, value in LIGHT.items():
        assert f"{name}: {value};" in light_block
    for name, value in DARK.items():
        assert f"{name}: {value};" in dark_block.split("}", 1)[0]
    assert "color-scheme: dark" in dark_block
    # the page's own CSS takes its colours from the variables, never a fixed text colour
    assert not re.search(r"(?<![-\w])color:\s*#", CSS)
    script = dark_figures.script()
    assert f"const F = {json.dumps(FIGURE_DARK)};" in script
    assert f"const LIGHT = {json.dumps(FIGURE_LIGHT)};" in script
    embedded = json.loads(re.search(r"const DATA = (\{.*?\});", script).group(1))
    assert embedded == {k.lower(): v for k, v in DARK_DATA.items()}
