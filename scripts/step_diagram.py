"""Draw one speculative step as an SVG for the home page (docs/assets/one-step.svg).

    python scripts/step_diagram.py            # rewrites docs/assets/one-step.svg
    python scripts/step_diagram.py --check    # exit 1 if the committed SVG differs from a fresh drawing

The picture is written by hand as SVG (no plotting library, no fonts fetched): a draft tree with
K = 3 slots per expansion, EAGLE's deterministic top-ranked slots and the sampled slot RheoSampling
puts in place of the last one; the target's one pass, which gives p at every kept node; the
verifier's walk (one child rejected, the sampled child accepted) and the bonus token drawn from p
at the leaf it reaches. The numbers are illustrative, not a measurement; the semantics are
docs/theory.md sections 1.3 (one step) and 2.2 (RheoSampling's slots).
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "docs" / "assets" / "one-step.svg"

#: Drawing size in px; the page shows it at the column's width (about 700 px), so text of 13 px
#: stays about 13 px on screen.
WIDTH, HEIGHT = 720, 430

#: Colours (Okabe-Ito, distinct for colour-blind readers).
DET, SAMPLED, ACCEPT, REJECT, GREY = "#0072B2", "#D55E00", "#009E73", "#CC3311", "#666666"

FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"

# Nodes: name -> (x, y, token, kind, q, p). kind: root, det, sampled. q is the draft probability of
# the token at its parent (for a sampled node: the law it was drawn from, shown as "s ~ L"), p the
# target's. Illustrative numbers.
NODES = {
    "root": (62, 175, "u", "root", None, None),
    "a": (230, 78, "the", "det", ".50", ".30"),
    "b": (230, 175, "a", "det", ".20", ".10"),
    "s": (230, 272, "one", "sampled", "s ~ L", ".45"),
    "a1": (420, 44, "cat", "det", ".60", ".20"),
    "a2": (420, 118, "dog", "det", ".25", ".05"),
    "s1": (420, 222, "day", "det", ".70", ".80"),
    "s2": (420, 300, "time", "sampled", "s ~ L", ".10"),
}
EDGES = [("root", "a"), ("root", "b"), ("root", "s"), ("a", "a1"), ("a", "a2"), ("s", "s1"), ("s", "s2")]
#: The verifier's walk: (parent, child, accepted?). The walk tries children in slot order.
WALK = [("root", "a", False), ("root", "b", False), ("root", "s", True), ("s", "s1", True)]
BONUS = ("s1", "was")  # s1 has no kept children: the walk emits y ~ p(. | u one day)

BOX_W, BOX_H = 64, 30


def _text(x, y, s, size=13, fill="#222", anchor="middle", weight="normal", style="normal"):
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (f"<text x='{x}' y='{y}' {FONT} font-size='{size}' fill='{fill}' text-anchor='{anchor}' "
            f"font-weight='{weight}' font-style='{style}'>{s}</text>")


def _box(x, y, kind, label):
    colour = {"root": GREY, "det": DET, "sampled": SAMPLED}[kind]
    dash = " stroke-dasharray='5 3'" if kind == "sampled" else ""
    fill = {"root": "#f2f2f2", "det": "#e8f1f8", "sampled": "#fbeee6"}[kind]
    return (f"<rect x='{x - BOX_W / 2}' y='{y - BOX_H / 2}' width='{BOX_W}' height='{BOX_H}' rx='6' "
            f"fill='{fill}' stroke='{colour}' stroke-width='2'{dash}/>"
            + _text(x, y + 5, label, size=14, weight="bold"))


def draw() -> str:
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {WIDTH} {HEIGHT}' width='{WIDTH}' "
           f"height='{HEIGHT}' role='img' aria-label='One speculative step: draft tree, one target pass, "
           f"the verifier walk, the accepted path and the bonus token'>",
           "<rect width='100%' height='100%' fill='white'/>",
           "<defs><marker id='arr' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='3.5' markerHeight='3.5' "
           f"orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' fill='{ACCEPT}'/></marker></defs>"]
    # The target's one pass: a band behind the kept nodes.
    out.append(f"<rect x='180' y='8' width='290' height='326' rx='10' fill='none' stroke='{GREY}' "
               "stroke-width='1' stroke-dasharray='2 3'/>")
    out.append(_text(325, 350, "one target pass: p at every kept node", size=12, fill=GREY))
    accepted = {(a, b) for a, b, ok in WALK if ok}
    rejected = {(a, b) for a, b, ok in WALK if not ok}
    for a, b in EDGES:
        xa, ya = NODES[a][:2]
        xb, yb = NODES[b][:2]
        if (a, b) in accepted:
            style = f"stroke='{ACCEPT}' stroke-width='4' marker-end='url(#arr)'"
        else:
            style = "stroke='#999' stroke-width='1.5'"
        out.append(f"<line x1='{xa + BOX_W / 2}' y1='{ya}' x2='{xb - BOX_W / 2 - 2}' y2='{yb}' {style}/>")
        if (a, b) in rejected:  # a cross on the edge the walk tried and left
            mx, my = (xa + BOX_W / 2 + xb - BOX_W / 2) / 2, (ya + yb) / 2
            out.append(f"<path d='M{mx - 6},{my - 6} L{mx + 6},{my + 6} M{mx - 6},{my + 6} L{mx + 6},{my - 6}' "
                       f"stroke='{REJECT}' stroke-width='3'/>")
    for name, (x, y, token, kind, q, p) in NODES.items():
        out.append(_box(x, y, kind, token))
        if q is not None:
            colour = SAMPLED if kind == "sampled" else DET
            label = q if kind == "sampled" else f"q {q}"
            out.append(_text(x - BOX_W / 2 - 4, y - BOX_H / 2 - 4, label, size=11, fill=colour, anchor="start"))
            out.append(_text(x + BOX_W / 2 + 4, y + BOX_H / 2 + 12, f"p {p}", size=11, fill="#333", anchor="end"))
    out.append(_text(62, 212, "prefix", size=12, fill=GREY))
    # The bonus token at the leaf the walk reached.
    src, token = BONUS
    x, y = NODES[src][:2]
    bx = 560
    out.append(f"<line x1='{x + BOX_W / 2}' y1='{y}' x2='{bx - BOX_W / 2 - 2}' y2='{y}' stroke='{ACCEPT}' "
               "stroke-width='4' stroke-dasharray='6 4' marker-end='url(#arr)'/>")
    out.append(f"<rect x='{bx - BOX_W / 2}' y='{y - BOX_H / 2}' width='{BOX_W}' height='{BOX_H}' rx='6' "
               f"fill='#e6f5ef' stroke='{ACCEPT}' stroke-width='2' stroke-dasharray='5 3'/>")
    out.append(_text(bx, y + 5, token, size=14, weight="bold"))
    out.append(_text(bx, y - 24, "bonus y ~ p", size=12, fill=ACCEPT, weight="bold"))
    # Slot annotations of the root's expansion.
    out.append(_text(128, 60, "EAGLE: top-K", size=11, fill=DET, anchor="middle"))
    out.append(_text(128, 74, "ranked by q", size=11, fill=DET, anchor="middle"))
    out.append(_text(128, 318, "RheoSampling:", size=11, fill=SAMPLED, anchor="middle"))
    out.append(_text(128, 332, "last slot sampled", size=11, fill=SAMPLED, anchor="middle"))
    out.append(_text(128, 346, "s ~ q outside head", size=11, fill=SAMPLED, anchor="middle"))
    # The output of the step.
    out.append(_text(600, 60, "output of the step", size=12, fill="#222", weight="bold"))
    out.append(_text(600, 80, "Z = (one, day, was)", size=13, fill=ACCEPT, weight="bold"))
    out.append(_text(600, 98, "|Z| = 3 tokens", size=12, fill="#333"))
    out.append(_text(600, 116, "tau = E|Z| per step", size=12, fill="#333"))
    out.append(_text(600, 150, "q: the draft's probability", size=11, fill=DET))
    out.append(_text(600, 165, "p: the target's probability", size=11, fill="#333"))
    # The legend: four numbered stages.
    legend = [("1", "draft q builds the tree: K slots per expansion, depth D, N kept nodes", DET),
              ("2", "the target scores every kept node in one forward pass: p at each", "#333"),
              ("3", "the verifier walks from the root: continue into a child, or reject it", REJECT),
              ("4", "accepted path + one token from p (bonus at a leaf, correction on a stop)", ACCEPT)]
    for i, (n, line, colour) in enumerate(legend):
        y = 374 + 15 * i
        out.append(f"<circle cx='26' cy='{y - 4}' r='6.5' fill='{colour}'/>")
        out.append(_text(26, y, n, size=10, fill="white", weight="bold"))
        out.append(_text(40, y, line, size=12, fill="#222", anchor="start"))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--check"]):
        print("usage: step_diagram.py [--check]", file=sys.stderr)
        return 2
    svg = draw()
    if args == ["--check"]:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == svg
        print(f"{OUT.name}: {'up to date' if same else 'differs from a fresh drawing'}")
        return 0 if same else 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(svg, encoding="utf-8")
    print(f"wrote {OUT.relative_to(OUT.parent.parent.parent)} ({len(svg)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
