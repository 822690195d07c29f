"""SIMULATOR: the simulated T20 cards as the stand-in torch_gcu sees them.

Reads the simulator state file (/etc/topsrider-sim/state.json, the contract
shared with efsmi and simctl). Not real hardware and not Enflame code.
"""
import json
import os

STATE_FILE = "/etc/topsrider-sim/state.json"
VISIBLE_ENV = ("ENFLAME_VISIBLE_DEVICES", "TOPS_VISIBLE_DEVICES")
# The cards' device files, as the enflame driver makes them (simctl makes the
# stand-ins); TOPSRIDER_SIM_DEV points elsewhere in tests.
DEV_DIR = "/dev"
_open_cards = {}


def state_path():
    # Tests outside a sim node may point at another file.
    return os.environ.get("TOPSRIDER_SIM_STATE", STATE_FILE)


def load_state(path=None):
    """The state dict, or None when the node has no simulator state."""
    try:
        with open(path or state_path()) as f:
            return json.load(f)
    except (IOError, OSError, ValueError):
        return None


def parse_visible(value):
    """ENFLAME_VISIBLE_DEVICES syntax -> None (all) or a list of indices."""
    if value is None:
        return None
    value = value.strip().lower()
    if value in ("", "all"):
        return None
    if value in ("none", "void"):
        return []
    out = []
    for part in value.split(","):
        part = part.strip()
        if part.isdigit() and int(part) not in out:
            out.append(int(part))
    return out


def visible_cards(state=None, environ=None):
    """Cards the driver sees (present) and the process may use, in order."""
    if state is None:
        state = load_state()
    if environ is None:
        environ = os.environ
    if not state or not state.get("driver_loaded"):
        return []
    cards = [c for c in state.get("cards", []) if c.get("present", True)]
    for name in VISIBLE_ENV:
        if name in environ:
            wanted = parse_visible(environ[name])
            if wanted is not None:
                by_index = dict((c.get("index"), c) for c in cards)
                cards = [by_index[i] for i in wanted if i in by_index]
            break
    return cards


def link_state(state=None):
    """SIMULATED fabric faults of this node (simctl link): (down, slow factor).
    No `link` key: up, factor 1.0."""
    if state is None:
        state = load_state()
    link = (state or {}).get("link") or {}
    try:
        slow = max(1.0, float(link.get("slow", 1.0)))
    except (TypeError, ValueError):
        slow = 1.0
    return bool(link.get("down")), slow


def device_file(index):
    return os.path.join(os.environ.get("TOPSRIDER_SIM_DEV", DEV_DIR), "gcu%d" % int(index))


class DeviceFileError(RuntimeError):
    """The card's device file cannot be opened (SIMULATED, as the driver fails)."""


def open_card(index):
    """Open the card's device file, as the real runtime does when a process first
    uses a card, and keep it open until the process exits (so that everyone can
    see who holds the card: /proc/<pid>/fd). The index is the driver's (the
    card's own), not the position among the visible cards."""
    index = int(index)
    if index in _open_cards:
        return _open_cards[index]
    path = device_file(index)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as exc:
        raise DeviceFileError("GCU error [simulated]: cannot open %s: %s (is the enflame driver loaded, "
                              "does the card have its device file?)" % (path, exc.strerror or exc))
    _open_cards[index] = fd
    return fd


def open_cards():
    """The card indexes this process holds."""
    return sorted(_open_cards)
