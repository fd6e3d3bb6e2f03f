"""Bad-input fuzzing of the CLI's task commands (issue 26, deliverable 6).

``privstats task new`` gets every bad value of every option: it must exit with status 2 and a
one-line error naming the option (argparse's or the CLI's), or write a task file; a traceback,
another exit status or an unnamed error is a finding.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

pytest.importorskip("privstats.services")

from privstats.cli import main

BASE = {
    "--statistic": "frequencies",
    "--model": "local",
    "--domain-size": "8",
    "--epsilon": "1",
    "--min-batch": "10",
}
SECURE = {
    "--statistic": "ecdf",
    "--model": "secure",
    "--bounds": ("0", "1"),
    "--grid": "16",
    "--domain-size": None,
}
SHUFFLE = {"--model": "shuffle", "--delta": "1e-6", "--epsilon": "8", "--min-batch": "1000"}

BAD = {
    "--epsilon": ["0", "-1", "nan", "inf", "1e300", "abc", "1e-300", ""],
    "--delta": ["-0.1", "1", "nan", "x", "1e300"],
    "--domain-size": ["0", "1", "-3", "2.5", "1e12", "99999999999999", "x"],
    "--min-batch": ["0", "-5", "x", "1000000000000000000000"],
    "--max-collections": ["0", "-1", "x", "99999999999999999999999"],
    "--protocol": ["bogus", "", "grr "],
    "--max-request-bytes": ["0", "-1", "x"],
    "--collector": ["ftp://x", "not a url", "http://", ""],
    "--tau": ["0", "-1"],
}
BAD_SECURE = {
    "--bounds": [
        ("1", "0"),
        ("0", "nan"),
        ("0", "inf"),
        ("a", "b"),
        ("0.5", "0.5"),
        ("-1e308", "1e308"),
        ("0",),
    ],
    "--grid": ["0", "-1", "1", "10000000000000", "x"],
    "--epsilon": ["0", "1e300", "nan"],
}


def _argv(opts: dict, out) -> list[str]:
    argv = ["task", "new"]
    for k, v in opts.items():
        if v is not None:
            argv += [k, *v] if isinstance(v, tuple) else [k, v]
    return [*argv, "--out", str(out)]


def _run(argv):
    err, outbuf = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(outbuf):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code
    return code, err.getvalue()


def _finding(opts, opt, tmp_path):
    out = tmp_path / "task.json"
    argv = _argv(opts, out)
    try:
        code, err = _run(argv)
    except Exception as exc:  # a traceback reaches the user
        return f"{opt}: {type(exc).__name__}: {exc}"
    if code == 0:
        task = json.loads(out.read_text())
        return None if task else f"{opt}: empty task file"
    name = opt.lstrip("-")
    if code != 2 or not any(s in err for s in (opt, name, name.replace("-", "_"))):
        return f"{opt}={opts[opt]!r}: exit {code}: {err.strip()[-200:]}"
    return None


@pytest.mark.parametrize(
    ("base", "bad"), [(BASE, BAD), ({**BASE, **SHUFFLE}, BAD), ({**BASE, **SECURE}, BAD_SECURE)]
)
def test_task_new_bad_options_exit_2_naming_the_option(base, bad, tmp_path):
    assert _finding(base, "--epsilon", tmp_path) is None  # the base command is valid
    findings = []
    for opt, values in bad.items():
        for v in values:
            f = _finding({**base, opt: v}, opt, tmp_path)
            if f:
                findings.append(f)
    assert findings == []
