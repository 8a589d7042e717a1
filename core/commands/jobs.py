"""Job commands: jobs submit|list|show|cancel|resume|delete|wait."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

from core.cliutil import add_workspace_arg, print_json
from core.data.workspace import Workspace
from core.errors import UserError
from core.runner import jobs, jobstore
from core.runner.kinds import KINDS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jobs", help="background jobs: submit, list, show, cancel, resume, delete, wait")
    jsub = p.add_subparsers(dest="jobs_cmd", required=True)
    s = jsub.add_parser("submit", help="start a job in the background")
    s.add_argument("kind", choices=sorted(KINDS))
    s.add_argument("--params", default="{}", help="job parameters as a JSON object")
    s.add_argument("--wait", action="store_true", help="block until it finishes")
    add_workspace_arg(s)
    s.set_defaults(func=cmd_submit)
    s = jsub.add_parser("list", help="list jobs")
    s.add_argument("--json", action="store_true")
    add_workspace_arg(s)
    s.set_defaults(func=cmd_list)
    for name, func, helptext in (("show", cmd_show, "show one job with its log tail"),
                                 ("cancel", cmd_cancel, "cancel a queued or running job"),
                                 ("resume", cmd_resume, "resume a failed or cancelled job from its last checkpoint"),
                                 ("delete", cmd_delete, "delete a job and its run folder"),
                                 ("wait", cmd_wait, "wait until a job finishes")):
        s = jsub.add_parser(name, help=helptext)
        s.add_argument("id")
        if name == "show":
            s.add_argument("--json", action="store_true", help="one JSON object (the job, its log tail as \"log_tail\")")
        add_workspace_arg(s)
        s.set_defaults(func=func)


def _job_dict(job: jobstore.Job) -> dict:
    from core.runner.jobview import device_text

    # the row's fields, not vars(): the typed params and any cached property read before are not the row's JSON
    d = {f.name: getattr(job, f.name) for f in dataclasses.fields(job) if f.name != "typed"}
    d["run_dir"] = str(job.run_dir)
    d["device"] = device_text(job)  # where the runner placed a training job (GPU and reserved memory, or CPU)
    return d


def cmd_submit(args: argparse.Namespace) -> int:
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as exc:
        raise UserError(f"--params: invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(params, dict):
        raise UserError("--params: expected a JSON object")
    ws = Workspace(args.workspace)
    job = jobs.submit(ws, args.kind, params)
    print(job.id)
    if args.wait:
        job = jobs.wait(ws, job.id, timeout=10**9)
        print(job.status)
        return 0 if job.status == "done" else 1
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    all_jobs = jobs.list_jobs(Workspace(args.workspace))
    if args.json:
        print_json([_job_dict(j) for j in all_jobs])
        return 0
    from core.recipes.duration import format_clock
    from core.runner.jobview import describe_job, status_text  # the same names as the app's Runs page

    for j in all_jobs:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(j.created))
        clock = format_clock(j.elapsed)
        print(f"{j.id}  {status_text(j, all_jobs):<9} {j.progress * 100:5.1f}%  {created}  {clock:>8}  {describe_job(j, 70)}"
              + (f"  — {j.message[:50]}" if j.message else ""))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    job = jobstore.get_job(Workspace(args.workspace), args.id)
    tail = job.log_tail(30)
    if args.json:  # one object a program can parse: the log tail inside it, not after it
        print_json({**_job_dict(job), "log_tail": tail or ""})
        return 0
    print_json(_job_dict(job))
    if tail:
        print("--- log tail ---")
        print(tail)
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    job = jobs.cancel(Workspace(args.workspace), args.id)
    print(f"{job.id} {job.status}")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    job = jobs.resume(Workspace(args.workspace), args.id)
    print(f"{job.id} {job.status}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    jobs.delete(Workspace(args.workspace), args.id)
    print(f"deleted {args.id}")
    return 0


def cmd_wait(args: argparse.Namespace) -> int:
    job = jobs.wait(Workspace(args.workspace), args.id, timeout=10**9)
    print(f"{job.id} {job.status}")
    return 0 if job.status == "done" else 1
