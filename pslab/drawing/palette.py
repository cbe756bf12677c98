"""Colours and display names of every pslab figure, in one place.

The idea it holds: a timeline block's *kind* (fetch, compute, push, update, idle; see
`pslab.timeline.KINDS`) decides its colour and its label, and so do the *roles* of the
diagrams (data, worker, server shard, controller, child, gradient flow, weight flow).
Two palettes exist because the two timeline figures colour the same kinds differently:

- ``"ps"`` -- figure 000, the parameter server: fetch blue, minibatch orange, push red,
  update grey, idle white;
- ``"accumulation"`` -- figure 001, gradient accumulation: forward/backward green,
  gradient sync blue, idle white (fetch and push reuse the sync blue, since there the
  only communication is the sync).

Matplotlib plots, the TikZ export and the hand-written figures in figures/ (through
`pslab.drawing.tex.style_preamble`) all read these dicts, so a colour is changed here or nowhere.
Colours are ``"#RRGGBB"`` strings: matplotlib takes them as they are, and LaTeX gets them
with the ``HTML`` colour model.
"""
from __future__ import annotations

from pslab.timeline import COLLECTIVES, EVERY_KIND, KINDS, PIPELINE

__all__ = ["KINDS", "COLLECTIVES", "PIPELINE", "EVERY_KIND", "PALETTES", "LABELS", "ROLES", "ROLE_LABELS", "TEX_PREFIX",
           "RUN_COLOURS", "colour", "label", "share_colours", "tex_colour_name"]

# A pipeline's blocks (pslab.timeline.PIPELINE) look alike in both palettes, as the
# collectives do: forwards blue, backwards green (its input half lighter), the weight half
# mauve, as the papers draw them; sends and receives pale yellow.
_PIPELINE_FILLS = {"forward": "#A4C2F4", "backward": "#93C47D", "backward-input": "#C9E4B4",
                   "backward-weight": "#D5A6BD", "send": "#FFE599", "recv": "#FFF2CC"}
_PIPELINE_LABELS = {"forward": "forward", "backward": "backward",
                    "backward-input": "backward: input gradient",
                    "backward-weight": "backward: weight gradient", "send": "send",
                    "recv": "receive"}

# Light fills for the blocks: black text and black outlines must stay readable on them.
PALETTES: dict[str, dict[str, str]] = {
    "ps": {
        "fetch": "#7EA6E0",    # blue: weights coming down from the server
        "compute": "#F9CB9C",  # orange: the minibatch
        "push": "#E88A8A",     # red: gradients going up to the server
        "update": "#D0D0D0",   # grey: the server applying w - alpha * grad
        "idle": "#FFFFFF",     # white: waiting
        "reduce-scatter": "#C9A0DC",  # lilac: gradients summed among the workers (ZeRO)
        "all-gather": "#8ED1C6",      # teal: weights gathered from the workers (ZeRO)
        **_PIPELINE_FILLS,
    },
    "accumulation": {
        "fetch": "#9FC5E8",    # same blue as the sync: all communication is one colour
        "compute": "#B6D7A8",  # green: forward/backward
        "push": "#9FC5E8",
        "update": "#9FC5E8",   # blue: gradient sync (all-reduce + step)
        "idle": "#FFFFFF",
        "reduce-scatter": "#C9A0DC",
        "all-gather": "#8ED1C6",
        **_PIPELINE_FILLS,
    },
}

# Text written in (or beside) a block; short in "ps" because the seed's blocks are narrow.
LABELS: dict[str, dict[str, str]] = {
    "ps": {"fetch": "F", "compute": "minibatch", "push": "P", "update": "Update",
           "idle": "idle", "reduce-scatter": "RS", "all-gather": "AG", **_PIPELINE_LABELS},
    "accumulation": {"fetch": "fetch", "compute": "forward/backward", "push": "push",
                     "update": "gradient sync", "idle": "idle",
                     "reduce-scatter": "reduce-scatter", "all-gather": "all-gather",
                     **_PIPELINE_LABELS},
}

# Roles of the diagrams 002 and 003 (and of the boxes/arrows around the timelines of 000).
# Flows are arrow colours, so they are darker than the fills; gradient = the push red,
# weight = the fetch blue, so the arrows of 000 and 002 read the same.
ROLES: dict[str, str] = {
    "data": "#A8DCCB",        # teal: the training data
    "worker": "#FCE2C4",      # light orange: a worker / GPU (the processors of 000)
    "server": "#F4C7D6",      # pink: a parameter-server shard (003's servers)
    "controller": "#C6E5B9",  # green: a controller replica (003)
    "child": "#C3DCF2",       # blue: a child replica (003)
    "gradient": "#C0392B",    # red arrows: gradients, worker -> server
    "weight": "#2E5FA8",      # blue arrows: weights, server -> worker
}

ROLE_LABELS: dict[str, str] = {
    "data": "Training data", "worker": "Worker", "server": "Parameter server",
    "controller": "Controller replica", "child": "Child replica",
    "gradient": "gradients", "weight": "weights",
}

# One colour per run in the loss and accuracy curves (Okabe–Ito, readable by colour-blind
# students): the run shown first, the run before it, ...; the staleness bars take the second.
RUN_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")

# Short prefix of a palette in LaTeX colour and style names (letters only: xcolor and
# \csname both accept them without escaping).
TEX_PREFIX: dict[str, str] = {"ps": "ps", "accumulation": "acc"}


def _check(palette: str, kind: str) -> None:
    if palette not in PALETTES:
        raise ValueError(f"palette must be one of {sorted(PALETTES)}, got {palette!r}")
    if kind not in EVERY_KIND:
        raise ValueError(f"kind must be one of {EVERY_KIND}, got {kind!r}")


def colour(kind: str, palette: str = "ps") -> str:
    """The ``#RRGGBB`` fill of a block of `kind` in `palette`."""
    _check(palette, kind)
    return PALETTES[palette][kind]


def label(kind: str, palette: str = "ps") -> str:
    """The display label of a block of `kind` in `palette`."""
    _check(palette, kind)
    return LABELS[palette][kind]


def share_colours(palette: str = "ps") -> dict[str, str]:
    """The fills of a worker's time split (`Run.shares`): compute as its blocks, every
    transfer in the fetch colour, idle white."""
    _check(palette, "compute")
    return {"compute": PALETTES[palette]["compute"], "transfer": PALETTES[palette]["fetch"],
            "idle": PALETTES[palette]["idle"]}


def tex_colour_name(name: str, palette: str | None = None) -> str:
    """The LaTeX colour name of a kind (``palette`` given) or of a role (``palette=None``).

    ``tex_colour_name("fetch", "ps") == "psFetch"``, ``tex_colour_name("server") == "roleServer"``.
    """
    if palette is None:
        if name not in ROLES:
            raise ValueError(f"role must be one of {sorted(ROLES)}, got {name!r}")
        return "role" + name.capitalize()
    _check(palette, name)  # letters only, as xcolor wants: "all-gather" -> "AllGather"
    return TEX_PREFIX[palette] + "".join(part.capitalize() for part in name.split("-"))
