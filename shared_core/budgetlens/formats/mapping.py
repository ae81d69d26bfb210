"""Any simple YAML or JSON agent file, read by a mapping the workspace configures.

A ``MappingSpec`` names the files (a glob) and the dotted paths of the model, the output
limit, the system prompt (as text, or as a file path relative to the file's folder, read
inside the workspace only) and a user template (mustache, rendered by chevron with
every variable empty). For example ``model: {name, max_tokens}``, ``instructions:
{file}``: ``MappingSpec("agents/*.yaml", model="model.name",
output="model.max_tokens", system_file="instructions.file")``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from budgetlens.files import FileSource
from budgetlens.formats.common import (
    Path_,
    check_completion_tokens,
    located,
    output_limit,
    read_inside,
)
from budgetlens.formats.frontmatter import FileYaml, read_yaml
from budgetlens.formats.model import Message, Problem, ProblemKind, PromptFile, Step
from budgetlens.formats.templates import fixed, mustache_variables, render_mustache
from budgetlens.source import LineIndex

FORMAT = "mapping"


@dataclass(frozen=True)
class MappingSpec:
    glob: str
    model: str
    output: str
    system_text: str | None = None
    system_file: str | None = None
    template: str | None = None
    template_role: str = "user"

    def matches(self, relative_path: str) -> bool:
        return fnmatch.fnmatch(relative_path, self.glob)


def _path(dotted: str) -> Path_:
    return tuple(int(p) if p.isdigit() else p for p in dotted.split("."))


def read(text: str, spec: MappingSpec, path: str = "",
         inputs: Mapping[str, Any] | None = None, root: Path | None = None,
         files: FileSource | None = None) -> PromptFile:
    problems: list[Problem] = []
    index = LineIndex(text)
    fy = read_yaml(text, 0, index, problems)
    result = PromptFile(path, FORMAT, [], problems)
    if fy is None:
        return result
    if not isinstance(fy.value, dict):
        problems.append(Problem(ProblemKind.NOT_A_PROMPT, "not a mapping", fy.whole()))
        return result
    model = located(fy, *_path(spec.model))
    output_path = _path(spec.output)
    output = output_limit(fy, [output_path], output_path)
    check_completion_tokens(model, output, problems)
    messages = _system(fy, spec, path, root, files, problems)
    messages += _template(fy, spec, inputs)
    result.steps.append(Step(name=Path(path).stem, messages=messages, model=model,
                             output=output, budgetlens=located(fy, "metadata", "budgetlens")))
    return result


def _system(fy: FileYaml, spec: MappingSpec, path: str, root: Path | None,
            files: FileSource | None, problems: list[Problem]) -> list[Message]:
    if spec.system_text is not None:
        where = _path(spec.system_text)
        text = fy.get(*where)
        if isinstance(text, str):
            return [Message("system", text, (), fy.range(*where) or fy.whole())]
    if spec.system_file is not None:
        where = _path(spec.system_file)
        name = fy.get(*where)
        if isinstance(name, str):
            rng = fy.range(*where) or fy.whole()
            body, why = read_inside((Path(path).parent if path else Path(".")) / name,
                                    root, files)
            if body is None:
                problems.append(Problem(ProblemKind.FILE_REFERENCE,
                                        f"system prompt file '{name}': {why}", rng))
                return []
            return [Message("system", body, (), rng)]
    return []


def _template(fy: FileYaml, spec: MappingSpec,
              inputs: Mapping[str, Any] | None) -> list[Message]:
    if spec.template is None:
        return []
    where = _path(spec.template)
    template = fy.get(*where)
    if not isinstance(template, str):
        return []
    return [Message(spec.template_role, fixed(render_mustache(template, inputs)),
                    tuple(mustache_variables(template)), fy.range(*where) or fy.whole())]
