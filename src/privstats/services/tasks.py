"""Task files: everything the parties of one deployment must agree on, public part apart from secrets.

A *task* fixes the statistic, the trust model, the protocol and all its parameters (derived ones
included, so every role rebuilds exactly the same protocol object), the privacy budget, the minimum
batch size, each role's URL and HPKE public key.  :func:`new_task` returns a :class:`Task` (public)
and one :class:`RoleSecrets` per party; :func:`write_task` writes them as

* ``task.json`` — the public part: safe to hand to every client (no key, no token);
* ``task.client.json`` — the upload token (clients);
* ``task.analyst.json`` — the collect token (the analyst);
* ``task.<role>.json`` — per server role: its HPKE private key, the *hashes* of the tokens it
  checks, and the tokens it presents to other servers (e.g. the shuffler's forward token).

**Integrity.**  ``task.json`` carries ``mac``, an HMAC-SHA256 of its canonical content keyed by the
task's *integrity key* (32 random bytes, ``integrity_key`` of the analyst's and every server role's
secrets file; clients get none, as anyone holding it could sign).  :func:`load_task` refuses
(:class:`~privstats.privacy.integrity.IntegrityError`) a file without its MAC or whose MAC does not
verify, e.g. ε or ``max_collections`` raised; ``privstats serve`` verifies with the role's own key.
A party that holds no key (a client) can only check that the MAC is present: clients should fetch
``task.json`` over an authenticated channel; the servers, which enforce the budget, verify it.

Roles per trust model (the URLs and keys the task file carries):

=========  ======================================  =====================================
model      roles (``Task.roles``)                   HPKE keys (``Task.hpke_keys``)
=========  ======================================  =====================================
local      collector                                none (reports are ε-LDP already)
shuffle    shuffler, analyzer                       analyzer (the shuffler cannot read)
secure     leader, helper                           leader, helper (one share each)
=========  ======================================  =====================================

Role modules (``collector.py``, ``shuffler.py``, the secure model's aggregators) read only
``Task`` and their own ``RoleSecrets``; :func:`load_task` and :func:`load_secrets` read them back
with validation (a bad file is a ``ValueError`` naming it).

>>> task, secrets = new_task("frequencies", model="local", protocol="grr", params={"domain_size": 8},
...                          epsilon=1.0, min_batch=100)
>>> task.protocol, task.params["domain_size"], sorted(secrets)
('grr', 8, ['analyst', 'client', 'collector'])
>>> Task.from_dict(task.to_dict()) == task
True
"""

from __future__ import annotations

import base64
import importlib
import json
import math
import os
import secrets as _secrets
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from privstats.privacy.guarantees import ApproxDP, Guarantee, PureDP, guarantee_from_dict
from privstats.privacy.integrity import IntegrityError, canonical_json, check_mac, mac, resolve_key

__all__ = [
    "DEFAULT_PORTS",
    "HPKE_ROLES",
    "MODEL_ROLES",
    "TASK_FORMAT_VERSION",
    "IntegrityError",
    "RoleSecrets",
    "Task",
    "build_protocol",
    "load_secrets",
    "load_task",
    "new_base_task",
    "new_task",
    "resolve_protocol",
    "secrets_path",
    "write_task",
]

TASK_FORMAT_VERSION = 1

MODEL_ROLES: dict[str, tuple[str, ...]] = {
    "local": ("collector",),
    "shuffle": ("shuffler", "analyzer"),
    "secure": ("leader", "helper"),
}
HPKE_ROLES: dict[str, tuple[str, ...]] = {
    "local": (),
    "shuffle": ("analyzer",),
    "secure": ("leader", "helper"),
}
DEFAULT_PORTS = {"collector": 8470, "shuffler": 8471, "analyzer": 8472, "leader": 8473, "helper": 8474}
#: client-side parties whose secrets are tokens only
TOKEN_PARTIES = ("client", "analyst")

LOCAL_PROTOCOLS = ("grr", "oue", "olh", "hr", "binary-rr")
SHUFFLE_ALIASES = {
    "single-rr": "shuffle-krr",
    "single-rappor": "shuffle-rappor",
    "multi-hadamard": "shuffle-hadamard",
    "multi-countmin": "shuffle-countmin",
}
SHUFFLE_PROTOCOLS = ("shuffle-krr", "shuffle-rappor", "shuffle-hadamard", "shuffle-countmin", "shuffle-sum")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise ValueError(f"{what} is not base64") from None


@dataclass(frozen=True)
class Task:
    """The public part of a task (what every party, clients included, may read).

    Attributes
    ----------
    task_id : 32 hex characters (16 random bytes); every report and request names it.
    statistic, model : what is estimated and under which trust model (``local``, ``shuffle``, ``secure``).
    protocol, params : the engine registry name and *all* parameters
        (``privstats.engine.build_oracle(protocol, params)`` rebuilds the protocol for the local and
        shuffle models; the secure model's roles interpret them themselves).
    guarantee : what one collection spends (a guarantee dict, ``Guarantee.to_dict``).
    budget : the task's total budget; the durable ledger refuses a collection that would overspend.
    min_batch : the smallest batch (of reports, i.e. users) a collection or shuffled release covers.
    urls : role -> base URL; hpke_keys : role -> base64url raw X25519 public key.
    max_request_bytes : the largest upload body a server accepts.
    extra : free-form public settings of other roles (e.g. the secure model's).
    """

    task_id: str
    statistic: str
    model: str
    protocol: str
    params: dict
    guarantee: dict
    budget: dict
    min_batch: int
    urls: dict
    hpke_keys: dict = field(default_factory=dict)
    max_request_bytes: int = 16 << 20
    extra: dict = field(default_factory=dict)
    dap: dict = field(default_factory=dict)  # DAP-09 deployment (privstats.services.dap.task)
    version: int = TASK_FORMAT_VERSION

    # ---- views ----------------------------------------------------------------------------------------
    @property
    def id_bytes(self) -> bytes:
        """The 16-byte task id (what reports and HPKE info strings carry)."""
        return bytes.fromhex(self.task_id)

    @property
    def roles(self) -> tuple[str, ...]:
        return MODEL_ROLES[self.model]

    def url(self, role: str) -> str:
        """Base URL of ``role`` (ValueError if this task has no such role)."""
        if role not in self.urls:
            raise ValueError(f"role must be one of {sorted(self.urls)} for a {self.model} task, got {role!r}")
        return str(self.urls[role]).rstrip("/")

    def hpke_public_key(self, role: str) -> bytes:
        """Raw X25519 public key of ``role``."""
        if role not in self.hpke_keys:
            raise ValueError(f"role {role!r} has no HPKE key in this task (keys: {sorted(self.hpke_keys)})")
        return _unb64(self.hpke_keys[role], f"hpke_keys[{role!r}]")

    @property
    def guarantee_value(self) -> Guarantee:
        return guarantee_from_dict(self.guarantee)

    @property
    def budget_value(self) -> Guarantee:
        return guarantee_from_dict(self.budget)

    def upload_role(self) -> str:
        """The role clients upload to: collector, shuffler, or leader."""
        return {"local": "collector", "shuffle": "shuffler", "secure": "leader"}[self.model]

    def collect_role(self) -> str:
        """The role the analyst collects from: collector, analyzer, or leader."""
        return {"local": "collector", "shuffle": "analyzer", "secure": "leader"}[self.model]

    # ---- (de)serialisation ---------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self, key: bytes | None = None) -> str:
        """The task as JSON; with ``key`` (the task's integrity key) it carries its ``mac``."""
        d = self.to_dict()
        if key is not None:
            d["mac"] = self.mac(key)
        return json.dumps(d, indent=2, sort_keys=True)

    def mac(self, key: bytes) -> str:
        """HMAC-SHA256 (hex) of the task's canonical JSON under the task's integrity key."""
        return mac(resolve_key(key), "task", canonical_json(self.to_dict()))

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "task") -> Task:
        """Validate and build; ValueError naming ``where`` and the field on a bad document."""
        if not isinstance(d, dict):
            raise ValueError(f"{where}: a task file is a JSON object")
        if d.get("version") != TASK_FORMAT_VERSION:
            raise ValueError(
                f"{where}: unsupported task format version {d.get('version')!r} "
                f"(this privstats reads {TASK_FORMAT_VERSION})"
            )
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}")
        missing = [
            k
            for k in (
                "task_id",
                "statistic",
                "model",
                "protocol",
                "params",
                "guarantee",
                "budget",
                "min_batch",
                "urls",
            )
            if k not in d
        ]
        if missing:
            raise ValueError(f"{where}: missing field(s) {missing}")
        try:
            tid = bytes.fromhex(d["task_id"])
        except (TypeError, ValueError):
            tid = b""
        if len(tid) != 16:
            raise ValueError(f"{where}: task_id must be 32 hex characters")
        if d["model"] not in MODEL_ROLES:
            raise ValueError(f"{where}: model must be one of {sorted(MODEL_ROLES)}, got {d['model']!r}")
        if not isinstance(d["min_batch"], int) or isinstance(d["min_batch"], bool) or d["min_batch"] < 1:
            raise ValueError(f"{where}: min_batch must be a positive integer")
        for key in ("params", "urls", "hpke_keys", "extra", "guarantee", "budget"):
            if key in d and not isinstance(d[key], dict):
                raise ValueError(f"{where}: {key} must be an object")
        try:
            guarantee_from_dict(d["guarantee"])
            guarantee_from_dict(d["budget"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where}: bad guarantee or budget: {exc}") from None
        return cls(**{k: d[k] for k in known if k in d})


@dataclass(frozen=True)
class RoleSecrets:
    """One party's secrets.

    * ``hpke_private_key``: base64url raw X25519 private key (roles that decrypt).
    * ``token_hashes``: kind -> sha256 hex of a token this role *checks* (``upload``, ``collect``,
      ``forward``, ...); servers never hold the tokens they check.
    * ``tokens``: kind -> token this party *presents* (``upload`` for clients, ``collect`` for the
      analyst, ``forward`` for the shuffler to the analyzer, ...).
    """

    task_id: str
    role: str
    hpke_private_key: str | None = None
    token_hashes: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)
    integrity_key: str | None = None

    @property
    def integrity_key_bytes(self) -> bytes:
        """The task's integrity key (hex in the file); IntegrityError if this party holds none."""
        if not self.integrity_key:
            raise IntegrityError(
                f"the {self.role} secrets hold no integrity_key (a task made by an older privstats: "
                "create it again with `privstats task new`)"
            )
        return resolve_key(self.integrity_key, "integrity_key")

    @property
    def private_key_bytes(self) -> bytes:
        if not self.hpke_private_key:
            raise ValueError(f"role {self.role!r} has no HPKE private key")
        return _unb64(self.hpke_private_key, "hpke_private_key")

    def token(self, kind: str) -> str:
        if kind not in self.tokens:
            raise ValueError(f"the {self.role} secrets hold no {kind!r} token (have {sorted(self.tokens)})")
        return str(self.tokens[kind])

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "secrets") -> RoleSecrets:
        if not isinstance(d, dict) or "task_id" not in d or "role" not in d:
            raise ValueError(f"{where}: not a privstats role secrets file")
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}")
        return cls(**d)


# ---------------------------------------------------------------------------------------------- protocols
def resolve_protocol(
    statistic: str,
    model: str,
    protocol: str | None,
    *,
    domain_size: int | None = None,
    epsilon: float,
    delta: float | None = None,
    min_batch: int,
    options: dict | None = None,
) -> tuple[str, dict]:
    """``(registry name, full params)`` of the protocol a task runs; ValueError naming the option.

    Local model: ``grr``, ``oue``, ``olh``, ``hr`` or ``auto`` (lowest worst-case variance).
    Shuffle model: ``single-rr``, ``single-rappor``, ``multi-hadamard``, ``multi-countmin``, ``auto`` (or
    the registry names ``shuffle-krr``, ...), calibrated for batches of ``min_batch`` users (a larger
    batch only adds blanket noise from more users); ``statistic="sum"`` runs ``shuffle-sum``.
    Secure model: ``dap-09+prio3`` (or ``auto``), params those of a
    :class:`~privstats.secure.histogram.SecureSpec` (``bounds`` required; ``grid``, ``method``,
    ``neighbours``, ``smoothing``).

    >>> resolve_protocol("frequencies", "local", "oue", domain_size=4, epsilon=1.0, min_batch=10)
    ('oue', {'domain_size': 4, 'epsilon': 1.0})
    """
    options = dict(options or {})
    if model == "local":
        if statistic != "frequencies":
            raise ValueError(f"--statistic: the local-model services run 'frequencies', got {statistic!r}")
        if domain_size is None:
            raise ValueError("--domain-size: frequencies need the public domain size")
        from privstats.local.choose import make_oracle

        name = protocol or "auto"
        if name not in (*LOCAL_PROTOCOLS, "auto"):
            raise ValueError(
                f"--protocol: local model protocol must be one of {['auto', *LOCAL_PROTOCOLS]}, got {name!r}"
            )
        if name == "binary-rr":
            return "binary-rr", {"domain_size": 2, "epsilon": float(epsilon)}
        oracle = make_oracle(name, domain_size, epsilon)
        return oracle.name, json.loads(json.dumps(oracle.params))
    if model == "shuffle":
        from privstats.stats.frequency import require_delta

        delta = require_delta(delta, min_batch)  # delta is spent only when the task's author passes it
        if min_batch < 2:
            raise ValueError("--min-batch: the shuffle model needs batches of at least 2 users")
        if statistic == "sum":
            from privstats.shuffle import ShuffledSum

            proto: Any = ShuffledSum(n=min_batch, epsilon=epsilon, delta=delta, **options)
        elif statistic == "frequencies":
            if domain_size is None:
                raise ValueError("--domain-size: frequencies need the public domain size")
            from privstats.stats.frequency import shuffle_protocol

            inv = {v: k for k, v in SHUFFLE_ALIASES.items()}
            name = inv.get(protocol or "auto", protocol or "auto")
            try:
                proto = shuffle_protocol(name, domain_size, min_batch, epsilon, delta, **options)
            except ValueError as exc:
                raise ValueError(f"--protocol: {exc}") from None
        else:
            raise ValueError(
                f"--statistic: the shuffle-model services run 'frequencies' or 'sum', got {statistic!r}"
            )
        return proto.name, json.loads(json.dumps(proto.params))
    if model == "secure":
        return _resolve_secure(
            statistic, protocol, epsilon=epsilon, delta=delta, domain_size=domain_size, options=options
        )
    raise ValueError(f"--model must be one of {sorted(MODEL_ROLES)}, got {model!r}")


SECURE_OPTIONS = ("bounds", "grid", "method", "neighbours", "smoothing")
#: what builds a secure-model task (DAP-09), named as "module:function" like the services' role apps,
#: so that this foundation module imports no role module (the DAP task module builds on this one)
SECURE_TASK_FACTORY = "privstats.services.dap.task:new_dap_task"


def _resolve_secure(
    statistic: str,
    protocol: str | None,
    *,
    epsilon: float,
    delta: float | None,
    domain_size: int | None,
    options: dict,
) -> tuple[str, dict]:
    """``("dap-09+prio3", SecureSpec params)`` of a secure task; ValueError naming the option."""
    from privstats.secure.histogram import PROTOCOL, STATISTICS, SecureSpec

    if protocol not in (None, "auto", PROTOCOL):
        raise ValueError(
            f"--protocol: the secure model runs {PROTOCOL!r} (DAP-09 with Prio3), got {protocol!r}"
        )
    if statistic not in STATISTICS:
        raise ValueError(f"--statistic: the secure services run {list(STATISTICS)}, got {statistic!r}")
    if delta:
        raise ValueError("--delta: the secure model's tree mechanism is pure ε-DP")
    if domain_size is not None:
        raise ValueError("--domain-size: the secure model takes --bounds and --grid")
    if "bounds" not in options:
        raise ValueError("--bounds: the secure model needs public bounds LO HI")
    unknown = set(options) - set(SECURE_OPTIONS)
    if unknown:
        raise ValueError(f"params: unknown secure-model option(s) {sorted(unknown)}")
    spec = SecureSpec.from_dict({"grid": 1024, **options, "statistic": statistic, "epsilon": epsilon})
    return PROTOCOL, spec.to_dict()


def build_protocol(task: Task):
    """The engine oracle of a local- or shuffle-model task (``ShuffledMessages`` for the shuffle model)."""
    from privstats.engine import build_oracle

    if task.model not in ("local", "shuffle"):
        raise ValueError(f"build_protocol covers the local and shuffle models, not {task.model!r}")
    return build_oracle(task.protocol, task.params)


# ---------------------------------------------------------------------------------------------- new task
def _hash_token(token: str) -> str:
    from privstats.services.security import token_hash

    return token_hash(token)


def _party_secrets(task_id: str, model: str) -> tuple[dict[str, RoleSecrets], dict[str, str]]:
    """Every party's secrets of a fresh task (tokens, token hashes, HPKE keys, the integrity key)
    and the roles' HPKE public keys."""
    from privstats.services.security import generate_keypair

    roles = MODEL_ROLES[model]
    upload, collect = _secrets.token_urlsafe(32), _secrets.token_urlsafe(32)
    secrets: dict[str, RoleSecrets] = {
        "client": RoleSecrets(task_id, "client", tokens={"upload": upload}),
        "analyst": RoleSecrets(task_id, "analyst", tokens={"collect": collect}),
    }
    keys: dict[str, str] = {}
    for role in HPKE_ROLES[model]:
        sk, pk = generate_keypair()
        keys[role] = _b64(pk)
        secrets[role] = RoleSecrets(task_id, role, hpke_private_key=_b64(sk))
    up_role = {"local": "collector", "shuffle": "shuffler", "secure": "leader"}[model]
    col_role = {"local": "collector", "shuffle": "analyzer", "secure": "leader"}[model]
    for role in roles:
        base = secrets.get(role) or RoleSecrets(task_id, role)
        hashes: dict[str, str] = {}
        tokens: dict[str, str] = {}
        if role == up_role:
            hashes["upload"] = _hash_token(upload)
        if role == col_role:
            hashes["collect"] = _hash_token(collect)
        secrets[role] = RoleSecrets(task_id, role, base.hpke_private_key, hashes, tokens)
    # server-to-server tokens: the first role of the model presents, the second checks
    if len(roles) == 2:
        sender, receiver = roles
        fwd = _secrets.token_urlsafe(32)
        s, r = secrets[sender], secrets[receiver]
        secrets[sender] = RoleSecrets(
            task_id, sender, s.hpke_private_key, s.token_hashes, {**s.tokens, "forward": fwd}
        )
        secrets[receiver] = RoleSecrets(
            task_id, receiver, r.hpke_private_key, {**r.token_hashes, "forward": _hash_token(fwd)}, r.tokens
        )
    if model == "secure":  # the leader's and helper's shared VDAF verify key (never given to clients)
        vkey = os.urandom(32).hex()
        for role in ("leader", "helper"):
            secrets[role] = replace(secrets[role], tokens={**secrets[role].tokens, "verify": vkey})
    ikey = os.urandom(32).hex()  # the task file's MAC key: the owner (analyst) and the servers, not clients
    secrets = {p: s if p == "client" else replace(s, integrity_key=ikey) for p, s in secrets.items()}
    return secrets, keys


def _guarantees(
    model: str, epsilon: float, delta: float, max_collections: int
) -> tuple[Guarantee, Guarantee]:
    """(one collection, the total budget) under basic composition."""
    if model == "local" or delta <= 0:
        return PureDP(epsilon), PureDP(epsilon * max_collections)
    return ApproxDP(epsilon, delta), ApproxDP(epsilon * max_collections, min(delta * max_collections, 0.999))


def new_task(
    statistic: str,
    *,
    model: str,
    protocol: str | None = None,
    params: dict | None = None,
    epsilon: float,
    delta: float | None = None,
    min_batch: int,
    max_collections: int = 1,
    urls: dict | None = None,
    max_request_bytes: int = 16 << 20,
    extra: dict | None = None,
    dap: bool = True,
) -> tuple[Task, dict[str, RoleSecrets]]:
    """A fresh task (random id, keys and tokens) and the secrets of every party.

    ``params`` holds protocol options (``domain_size`` and protocol-specific extras); the returned
    task carries the resolved protocol's full params.  The budget allows ``max_collections``
    collections, each spending the protocol's guarantee (basic composition).

    >>> t, s = new_task("frequencies", model="shuffle", protocol="single-rr", params={"domain_size": 4},
    ...                 epsilon=1.0, delta=1e-6, min_batch=1000)
    >>> t.protocol, sorted(t.hpke_keys), sorted(s)
    ('shuffle-krr', ['analyzer'], ['analyst', 'analyzer', 'client', 'shuffler'])

    A secure-model task is a DAP-09 task (:func:`privstats.services.dap.task.new_dap_task`): its
    ``dap`` object is what a DAP client and the two aggregators need; ``params`` takes the
    :class:`~privstats.secure.histogram.SecureSpec` options plus ``time_precision`` (seconds) and
    ``chunk_length`` (Prio3Histogram).  ``dap=False`` leaves that object out (:func:`new_base_task`).
    """
    limits: dict[str, Any] = {"max_request_bytes": int(max_request_bytes), "extra": dict(extra or {})}
    if model == "secure" and dap:
        terms = {"epsilon": epsilon, "delta": delta, "min_batch": min_batch, "urls": urls}
        task, secrets = _new_secure_task(statistic, protocol, dict(params or {}), max_collections, **terms)
        return replace(task, **limits), secrets
    epsilon, min_batch, max_collections = _check_numbers(model, epsilon, min_batch, max_collections)
    p = dict(params or {})
    name, full = resolve_protocol(
        statistic,
        model,
        protocol,
        domain_size=p.pop("domain_size", None),
        epsilon=epsilon,
        delta=delta,
        min_batch=min_batch,
        options=p,
    )
    one, total = _guarantees(model, epsilon, float(full.get("delta", delta or 0.0)), max_collections)
    role_urls = _role_urls(model, urls)
    task_id = os.urandom(16).hex()
    secrets, keys = _party_secrets(task_id, model)
    task = Task(
        task_id=task_id,
        statistic=statistic,
        model=model,
        protocol=name,
        params=full,
        guarantee=one.to_dict(),
        budget=total.to_dict(),
        min_batch=min_batch,
        urls=role_urls,
        hpke_keys=keys,
        **limits,
    )
    if not math.isfinite(epsilon * max_collections):
        raise ValueError("max_collections: the total budget overflows")
    return task, secrets


def new_base_task(statistic: str, **options: Any) -> tuple[Task, dict[str, RoleSecrets]]:
    """:func:`new_task` (the same keywords) without the secure model's ``dap`` object (what
    :func:`new_dap_task <privstats.services.dap.task.new_dap_task>` builds on): id, keys, tokens,
    guarantee, URLs."""
    return new_task(statistic, dap=False, **options)


def _check_numbers(
    model: str, epsilon: float, min_batch: int, max_collections: int
) -> tuple[float, int, int]:
    """``(epsilon, min_batch, max_collections)`` checked, with the model's name."""
    from privstats.validation import check_epsilon, check_positive_int

    epsilon = check_epsilon(epsilon)
    min_batch = check_positive_int(min_batch, "min_batch")
    max_collections = check_positive_int(max_collections, "max_collections")
    if model not in MODEL_ROLES:
        raise ValueError(f"model must be one of {sorted(MODEL_ROLES)}, got {model!r}")
    return epsilon, min_batch, max_collections


def _role_urls(model: str, urls: dict | None) -> dict[str, str]:
    """Each role's URL: as given, else ``http://127.0.0.1:<its default port>``."""
    roles = MODEL_ROLES[model]
    given = dict(urls or {})
    bad = set(given) - set(roles)
    if bad:
        raise ValueError(f"urls: a {model} task has roles {list(roles)}, not {sorted(bad)}")
    return {r: str(given.get(r) or f"http://127.0.0.1:{DEFAULT_PORTS[r]}").rstrip("/") for r in roles}


def _new_secure_task(statistic: str, protocol, params: dict, max_collections: int, *, delta, **kw):
    """A DAP-09 task (Prio3Histogram) for the secure model's statistic; the options as :func:`new_task`
    (``max_request_bytes`` and ``extra`` are set by the caller, as for every model)."""
    module, name = SECURE_TASK_FACTORY.split(":")
    new_dap_task = getattr(importlib.import_module(module), name)
    dap_opts = {k: params.pop(k) for k in ("time_precision", "chunk_length") if k in params}
    _resolve_secure(  # validates every option, with the CLI's names
        statistic,
        protocol,
        epsilon=kw["epsilon"],
        delta=delta,
        domain_size=params.pop("domain_size", None),
        options=params,
    )
    spec_opts = {k: params[k] for k in ("grid", "method", "neighbours") if k in params}
    task, secrets = new_dap_task(
        statistic,
        bounds=tuple(params["bounds"]),
        max_collections=max_collections,
        **{"grid": 1024, **spec_opts},
        **dap_opts,
        **kw,
    )
    return replace(task, params={**task.params, "smoothing": params.get("smoothing")}), secrets


# ---------------------------------------------------------------------------------------------- files
def secrets_path(task_path: str | Path, party: str) -> Path:
    """``task.json`` -> ``task.<party>.json`` (next to it)."""
    p = Path(task_path)
    stem = p.name[: -len(".json")] if p.name.endswith(".json") else p.name
    return p.with_name(f"{stem}.{party}.json")


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def write_task(task: Task, secrets: dict[str, RoleSecrets], out: str | Path) -> dict[str, Path]:
    """Write ``out`` (public, with its MAC) and ``<out stem>.<party>.json`` (mode 0600) per party;
    returns the paths.  The MAC key is the secrets' ``integrity_key``."""
    out = Path(out)
    keys = {s.integrity_key for s in secrets.values() if s.integrity_key}
    if len(keys) != 1:
        raise ValueError("secrets: the parties must share exactly one integrity_key (as new_task makes)")
    out.write_text(task.to_json(resolve_key(keys.pop(), "integrity_key")) + "\n", encoding="utf-8")
    paths = {"task": out}
    for party, sec in secrets.items():
        path = secrets_path(out, party)
        _write_private(path, sec.to_json() + "\n")
        paths[party] = path
    return paths


def _read_json(path: str | Path, what: str) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{what}: file not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{what}: cannot read {path}: {exc}") from None


def load_task(
    path: str | Path | Task, *, key: bytes | None = None, verify: bool = True, require_key: bool = True
) -> Task:
    """The public task from a ``task.json`` path (or a Task, returned as is), its MAC verified.

    ``key``: the task's integrity key; by default the ``integrity_key`` of a secrets file next to the
    task (the analyst's or a server role's).  ``require_key=False`` (a client, which holds no key)
    accepts a task it cannot verify provided it carries a MAC.  Raises
    :class:`~privstats.privacy.integrity.IntegrityError` on a missing or wrong MAC; ``verify=False``
    skips the check (forensics only).
    """
    if isinstance(path, Task):
        return path
    d = _read_json(path, "task")
    tag = d.pop("mac", None) if isinstance(d, dict) else None
    task = Task.from_dict(d, where=str(path))
    if not verify:
        return task
    k = resolve_key(key, "key") if key is not None else _task_key_near(path, task)
    if k is None:
        if require_key:
            raise IntegrityError(
                f"{path}: no integrity key to verify the task with: pass key=, or keep the analyst's "
                "or a server role's secrets file next to it"
            )
        if not isinstance(tag, str) or not tag:
            raise IntegrityError(f"{path}: carries no MAC (removed, or written unsigned); refusing it")
        return task
    check_mac(k, "task", canonical_json(task.to_dict()), tag, str(path))
    return task


def _task_key_near(path: str | Path, task: Task) -> bytes | None:
    """The integrity key of the first secrets file next to ``path`` that holds one."""
    for party in ("analyst", *MODEL_ROLES.get(task.model, ())):
        p = secrets_path(path, party)
        if p.is_file():
            try:
                sec = load_secrets(path, party)
            except ValueError:
                continue
            if sec.integrity_key and sec.task_id == task.task_id:
                return sec.integrity_key_bytes
    return None


def load_secrets(task_path: str | Path, party: str, path: str | Path | None = None) -> RoleSecrets:
    """``party``'s secrets (``task.<party>.json`` next to the task unless ``path`` is given)."""
    p = Path(path) if path is not None else secrets_path(task_path, party)
    sec = RoleSecrets.from_dict(_read_json(p, f"{party} secrets"), where=str(p))
    if sec.role != party:
        raise ValueError(f"{p}: holds the secrets of {sec.role!r}, not {party!r}")
    return sec
