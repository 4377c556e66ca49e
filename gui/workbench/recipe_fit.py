"""Does a recipe fit the file it is applied to? What of it finds nothing there, in one sentence.

A recipe made for one checkpoint and applied to another can quietly do nothing: remaps that match no
name, filters that keep or drop nothing, exact names the file lacks. The workbench says so instead.
"""

from __future__ import annotations

from engine.surgery import REMAP, Plan


def misfit(plan: Plan) -> str:
    """``2 of 3 remap rules match no tensor ('^fc' -> 'head'); ...``, or "" when every rule finds something."""
    remaps = [h for h in plan.rule_hits if h.kind == REMAP]
    filters = [h for h in plan.rule_hits if h.kind != REMAP]
    emptied = plan.emptied_by()
    parts = [emptied] if emptied else []
    for label, hits in (("remap rule", remaps), ("filter rule", filters)):
        idle = [h.subject for h in hits if h.count == 0]
        if idle:
            more = f" and {len(idle) - 1} more" if len(idle) > 1 else ""
            verb = "matches" if len(idle) == 1 else "match"
            parts.append(f"{len(idle)} of {len(hits)} {label}{'s' if len(hits) != 1 else ''} {verb} no tensor "
                         f"({idle[0]}{more})")
    absent = [path for path in plan.recipe.module_overrides if path not in plan.modules]
    if absent:
        more = f" and {len(absent) - 1} more" if len(absent) > 1 else ""
        parts.append(f"module type set for {absent[0]!r}{more}, which no source has")
    return "; ".join(parts)
