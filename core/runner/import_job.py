"""The "import" job: a corpus read into the workspace in a background process, apart from core.data.workspace so the
workspace (which the runner itself reads) never imports the runner back."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from core.data.uploads import import_staged

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import ImportParams


def import_job(params: ImportParams, ctx: JobContext) -> dict[str, Any]:
    """Job form of `import_corpus` (kind "import"), so a multi-GB DC read from a server path, or a large upload's
    copy (`upload` set), keeps going when the browser tab closes."""
    if params.upload:
        info = import_staged(ctx.workspace, params.path, params.upload, role=params.role, name=params.name,
                             fmt=params.format, overwrite=params.overwrite, progress=ctx.progress)
    else:
        info = ctx.workspace.import_corpus(params.path, role=params.role, name=params.name, fmt=params.format,
                                           overwrite=params.overwrite, progress=ctx.progress)
    ctx.log(f"imported {info.name}: {info.sentences} sentences, {info.tokens} tokens")
    for warning in info.warnings:
        ctx.log(f"warning: {warning}")
    return {**asdict(info), "warning": "; ".join(info.warnings) or None}  # the job panel shows one warning
