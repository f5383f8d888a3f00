"""The labels the built-in gateway's counters may carry, and how many.

Every count is kept per label set (role, model, direction; role, API,
status; role, API, error kind), and every label set is a line on
``/metrics`` and in the counts file.  A label made from whatever a request
names would let anyone who can reach the port grow both without end, until
the session's prober refuses the page and, fail-closed, the crew stops.
So every key a :class:`~choragos.gateway.metrics.Tally` counts under, live
or read back from a counts file, goes through :meth:`Labels.key` first:

- a label is a short printable string; anything else becomes :data:`OTHER`;
- at most :data:`MAX_AGENTS` roles get a label of their own, the rest share
  :data:`UNKNOWN` (no role can be called that: role names are letters,
  digits, ``-`` and ``_``);
- a role counts tokens for at most :data:`MAX_MODELS` models, the rest
  under :data:`OTHER` (priced as an unknown model: conservatively);
- a family holds at most :data:`MAX_SERIES` label sets; past that a new
  one is folded into its role's :data:`OTHER` set.

So the page stays far below the prober's limit whatever the wire says.
"""

from __future__ import annotations

UNKNOWN = "(unknown)"  # a request no role could be charged with
OTHER = "(other)"      # a label past a bound, or not a label at all
MAX_AGENTS = 64
MAX_MODELS = 16        # per role
MAX_SERIES = 1024      # per family: about 100 KiB of /metrics each
MAX_LABEL = 128
APIS = frozenset({"anthropic", "openai", "gemini", ""})

Key = tuple[str, str, str]


def clean(label: object) -> str:
    """``label`` if it is a short printable string, else :data:`OTHER`."""
    if isinstance(label, str) and len(label) <= MAX_LABEL and label.isprintable():
        return label
    return OTHER


class Labels:
    """Bounds the label sets of a tally's families; the caller holds the tally's lock."""

    def __init__(self, max_agents: int = MAX_AGENTS, max_series: int = MAX_SERIES) -> None:
        self.max_agents, self.max_series = max_agents, max_series
        self._agents: set[str] = set()
        self._models: dict[str, set[str]] = {}

    def agent(self, name: object) -> str:
        """The role label ``name`` counts under: itself while there is room, else UNKNOWN."""
        name = clean(name)
        if name == OTHER or not name:
            return UNKNOWN
        if name in self._agents or name == UNKNOWN:
            return name
        if len(self._agents) >= self.max_agents:
            return UNKNOWN
        self._agents.add(name)
        return name

    def model(self, agent: str, name: object) -> str:
        """The model label of ``agent``'s tokens: ``name`` while the role has room."""
        name, models = clean(name), self._models.setdefault(agent, set())
        if name not in models and len(models) >= MAX_MODELS:
            return OTHER
        models.add(name)
        return name

    def key(self, family: str, key: Key, present: dict[Key, int]) -> Key:
        """The bounded key to count ``key`` under, given the family's ``present`` keys."""
        agent = self.agent(key[0])
        middle = self.model(agent, key[1]) if family == "tokens" else (
            key[1] if key[1] in APIS else OTHER)
        bounded = (agent, middle, clean(key[2]))
        if bounded in present or len(present) < self.max_series:
            return bounded
        # Full: the role keeps its own line for the overflow (the direction, for tokens,
        # comes from a fixed set, so the line stays priced and summed right).
        return (agent, OTHER, bounded[2]) if family == "tokens" else (agent, middle, OTHER)
