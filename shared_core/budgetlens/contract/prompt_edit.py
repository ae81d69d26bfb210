"""The clamp plan of a prompt file: its output limit written in the format's own key.

The reader says where the limit is (``OutputLimit``: the key path, the value's range) or,
when the file sets none, where the key goes (the deepest written parent mapping, else the
whole YAML document). The plan replaces the number in place, or inserts the key (and any
missing parent mappings) as block lines in the parent's indentation. Nothing here knows a
format: only the key path and the ranges the reader gives.

Every edit is verified as a pipeline's is (``yamldoc.verify``): the YAML part of the file
(the front matter, or the whole file) is edited in memory and parsed again, and its data
must equal the original's with exactly the planned value set. A file whose edit does not
verify gets none, and a note says where to set the value by hand.

An output limit that is unset is written with the value the check counted (the model's
output ceiling, at most half the window, or the clamp's lower value): the check then reads
the same number, from the file, and BL070 is gone.
"""

from __future__ import annotations

from pathlib import Path

from budgetlens.contract.config import read_config
from budgetlens.contract.discovery import is_prompt_path, mapping_in
from budgetlens.contract.enums import OutputSource
from budgetlens.contract.plan import ClampChange, ClampPlan, clamp_plan
from budgetlens.contract.results import PipelineReport
from budgetlens.files import FileSource, SourceError
from budgetlens.formats import mapping, read_prompt_file
from budgetlens.formats.frontmatter import split_front_matter
from budgetlens.formats.mapping import MappingSpec
from budgetlens.formats.model import OutputLimit
from budgetlens.source import LineIndex, Position, Range, TextEdit
from budgetlens.yamldoc.parse import parse_yaml
from budgetlens.yamldoc.verify import Planned, verify_file_edits


def clamp_plan_for(report: PipelineReport, *, files: FileSource,
                   edit_parent: bool = False) -> ClampPlan:
    """``clamp_plan`` of a pipeline, ``prompt_clamp_plan`` of a prompt file."""
    if is_prompt_path(report.pipeline):
        return prompt_clamp_plan(report, files=files)
    if report.config is not None:  # a file config.json's prompt_mappings reads
        spec = mapping_in(report.pipeline, read_config(report.config, files))
        if spec is not None:
            return prompt_clamp_plan(report, files=files, spec=spec)
    return clamp_plan(report, files=files, edit_parent=edit_parent)


def prompt_clamp_plan(report: PipelineReport, *, files: FileSource,
                      spec: MappingSpec | None = None) -> ClampPlan:
    """The edits that write each step's output limit: lowered where the clamp lowers it,
    inserted with the counted value where the file sets none."""
    plan = ClampPlan(report.pipeline)
    if report.window is None or not report.steps:
        return plan
    path = report.pipeline
    try:
        text = files.read_text(Path(path))
    except SourceError as exc:
        plan.notes.append(f"{path}: cannot be read ({exc}); nothing clamped")
        return plan
    prompt = mapping.read(text, spec, path) if spec is not None \
        else read_prompt_file(path, text)
    if prompt is None or len(prompt.steps) != len(report.steps):
        return plan
    lowered = {oc.index: oc.after for oc in report.clamp.outputs}
    for s in report.steps:
        out = prompt.steps[s.index].output
        after = lowered.get(s.index)
        if out.value is not None and after is not None and after < out.value:
            change = _replace(path, out, after, s.step)
        elif out.value is None and s.output_source is OutputSource.MODEL_MAX_TOKENS:
            value = after if after is not None else s.output.value
            change = _insert(path, text, out, value, s.step)
        else:
            continue
        if isinstance(change, str):
            plan.notes.append(f"{path}: not edited: {change}; set {out.key} by hand")
            continue
        why = _verify(path, text, change)
        if why is not None:
            plan.notes.append(f"{path}: not edited: {why}; set {out.key} to {change.after}"
                              " by hand")
            continue
        plan.changes.append(change)
    return plan


def _key_path(key: str) -> tuple[str, ...]:
    return tuple(key.split("."))


def _replace(path: str, out: OutputLimit, after: int, step: str) -> ClampChange | str:
    if out.range is None:
        return "its output limit has no place in the file"
    edit = TextEdit(path, out.range, str(after))
    return ClampChange(path, out.range, out.key, out.value, after,
                       "lowered so the step fits the window", step, (edit,),
                       _key_path(out.key))


def _insert(path: str, text: str, out: OutputLimit, value: int,
            step: str) -> ClampChange | str:
    """The key (and its missing parents) inserted as block lines: in the parent mapping,
    at its first key's indentation, else at the end of the YAML document."""
    rng = out.insert_range
    if rng is None:
        return "the file has no YAML to insert the key into"
    keys = _key_path(out.key)
    index = LineIndex(text)
    yaml_start, yaml_end = _yaml_span(path, text)
    whole = index.offset(rng.start) <= yaml_start and index.offset(rng.end) >= yaml_end - 1
    depth = _parent_depth(text[yaml_start:yaml_end], keys)
    if depth is None:
        return f"a parent of {out.key} is written as a value, not a mapping"
    if whole:  # no parent mapping written: at the end of the document, top level
        rest, indent = keys, 0
        at = yaml_end
        prefix = "" if at == 0 or text[at - 1] == "\n" else "\n"
    else:
        start = index.offset(rng.start)
        if text[start:start + 1] in ("{", "["):
            return f"{'.'.join(keys[:-1])} is written in flow style ({{...}})"
        rest, indent = keys[depth:], rng.start.character
        at = start - rng.start.character  # the start of the parent's first key's line
        prefix = ""
    lines = "".join(f"{' ' * (indent + 2 * i)}{k}:" + (f" {value}\n" if i == len(rest) - 1
                                                       else "\n")
                    for i, k in enumerate(rest))
    pos = index.position(at)
    edit = TextEdit(path, Range(pos, pos), prefix + lines)
    return ClampChange(path, Range(pos, pos), out.key, None, value,
                       "unset: written with the value the check counts (the model's output"
                       " ceiling, at most half the window, or the clamp's)", step, (edit,),
                       keys)


def _parent_depth(yaml_text: str, keys: tuple[str, ...]) -> int | None:
    """How many of the key's parents are written (as mappings); ``None`` when one is
    written as something else (``model: gpt-4o``, a string, cannot take ``options``)."""
    doc, _ = parse_yaml(yaml_text)
    node = doc.value if doc is not None else None
    depth = 0
    while depth < len(keys) - 1 and isinstance(node, dict) and keys[depth] in node:
        node = node[keys[depth]]
        depth += 1
    return depth if isinstance(node, dict) else None


def _yaml_span(path: str, text: str) -> tuple[int, int]:
    """The YAML part of the file: its front matter, or the whole file."""
    split = None if path.endswith((".yml", ".yaml")) else split_front_matter(text, True)
    if split is None:
        return 0, len(text)
    return split.yaml_start, split.yaml_start + len(split.yaml)


def _verify(path: str, text: str, change: ClampChange) -> str | None:
    """Why the change's edits are not exactly the planned value in the YAML part."""
    start, end = _yaml_span(path, text)
    index = LineIndex(text)
    shift = index.position(start).line  # the YAML part starts at a line's start
    if any(not start <= index.offset(e.range.start) <= index.offset(e.range.end) <= end
           for e in change.edits):
        return "the edit lies outside the file's YAML"
    doc, problems = parse_yaml(text[start:end])
    if doc is None:
        return problems[0].message if problems else "its YAML cannot be read"
    local = [TextEdit(e.file, Range(Position(e.range.start.line - shift, e.range.start.character),
                                    Position(e.range.end.line - shift, e.range.end.character)),
                      e.new_text) for e in change.edits]
    return verify_file_edits(doc, local, [Planned(change.path, change.after)])


__all__ = ["clamp_plan_for", "prompt_clamp_plan"]
