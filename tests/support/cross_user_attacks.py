"""What a candidate's code tries against a baseline run as another user, and what it gets."""

from __future__ import annotations

POISON = (
    "import os, sys, builtins; (os.environ.get('PASSK_VERSION') == 'baseline' or "
    "sys.argv[-2:] == ['--policy', 'v1']) and setattr(builtins, "
    "'print', (lambda p: lambda *a, **k: p(*[x.replace('\"decision\": \"', "
    '\'"decision": "poisoned-\') if isinstance(x, str) else x for x in a], **k))'
    "(builtins.print))\n"
)
"""Makes every later Python of that user that is a baseline attempt answer wrong: a process
per attempt known by its ``PASSK_VERSION``, a worker (which serves many attempts and gets no
such variable) by the baseline's command, which the base's passk.yml names for all to read."""

# The pull request's agent: before answering, it plants the .pth in its own
# user site-packages and in every other agent home it can find.
PLANT = f"""
import glob, site
poison = {POISON!r}
planted = {{}}
homes = {{os.environ["HOME"], *glob.glob(os.path.join(os.path.dirname(os.environ["HOME"]),
                                                    "passk-agent-*"))}}
for home in sorted(homes):
    target = os.path.join(home, ".local", "lib", "python%d.%d" % sys.version_info[:2],
                          "site-packages")
    try:
        os.makedirs(target, exist_ok=True)
        with open(os.path.join(target, "zz_passk_poison.pth"), "w") as handle:
            handle.write(poison)
        planted[home] = "planted"
    except OSError as exc:
        planted[home] = type(exc).__name__
with open(os.environ["ATTACK_LOG"], "a") as handle:
    handle.write(json.dumps(planted) + "\\n")
"""


VICTIM = "import time\nwhile True:\n    time.sleep(0.05)\n"

# A candidate process, alive while a baseline attempt runs: it goes for it every way.
ATTACKER = r"""
import ctypes, errno, json, os, signal, sys
victim, home = int(sys.argv[1]), sys.argv[2]
found = {}
def attempt(name, action):
    try:
        action()
        found[name] = "done"
    except OSError as exc:
        found[name] = errno.errorcode.get(exc.errno, str(exc.errno))
libc = ctypes.CDLL(None, use_errno=True)
def ptrace(request):
    if libc.ptrace(request, victim, None, None) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    libc.ptrace(17, victim, None, None)  # PTRACE_DETACH
attempt("ptrace attach", lambda: ptrace(16))
attempt("ptrace seize", lambda: ptrace(0x4206))
attempt("read environ", lambda: open(f"/proc/{victim}/environ", "rb").read())
attempt("open mem", lambda: open(f"/proc/{victim}/mem", "rb").close())
attempt("write its HOME", lambda: open(os.path.join(home, "planted"), "w").close())
attempt("signal 0", lambda: os.kill(victim, 0))
attempt("SIGSTOP", lambda: os.kill(victim, signal.SIGSTOP))
attempt("SIGKILL", lambda: os.kill(victim, signal.SIGKILL))
print(json.dumps(found))
"""


REFUSED = {
    "ptrace attach": "EPERM",
    "ptrace seize": "EPERM",
    "read environ": "EACCES",
    "open mem": "EACCES",
    "write its HOME": "EACCES",
    "signal 0": "EPERM",
    "SIGSTOP": "EPERM",
    "SIGKILL": "EPERM",
}
"""What a candidate process gets, each way it goes for a baseline of another user."""
