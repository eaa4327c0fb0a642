"""An ORM query of a fixed shape, compiled to SQL once per process and database, then run with new values.

Compiling a query (the SELECT list of two models, the joins, the WHERE) costs several times what running it costs:
about 0.4-0.7 ms of CPU against 0.1 ms for the three lookups that every signed-in request makes (the session, its
user, an API token). `Prepared` keeps the SQL and the compiler of the first call and gives later calls the same
model instances the ORM would, built from the rows by Django's own pieces (the compiler's converters,
`Model.from_db`, the populators of `select_related`). The query still goes through the connection's cursor, so
query counting, the debug log and the execute wrappers see it as any other.

    TOKEN = Prepared(
        lambda key_hash: ApiToken.objects.select_related("user").filter(key_hash=key_hash)[:1],
        key_hash=ApiToken._meta.get_field("key_hash"),
    )
    TOKEN.objects(some_hash)  # [ApiToken] or []

A `values()`, `values_list()` or flat `values_list()` query gives its dicts, tuples or values through `rows()`
instead, annotations included.

Each value is named by the model field it is compared with (an unbound field, e.g. `models.FloatField()`, for a value
of raw SQL), and prepared for the database as the ORM would (`get_db_prep_value`). The query is built and compiled
twice, with two sets of stand-ins: the SQL must come out the same, and every parameter must either be the same in both
(a constant) or be one value's stand-in in each (a value may be used more than once). A shape where that does not hold
(a value folded into the SQL, or changed on the way, such as `now - a day` computed in the build) is refused at its
first call, never run with the wrong parameters: pass each value the query uses as one of its own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import secrets
import threading
from collections.abc import Callable

from django.db import connections, models
from django.db.models.query import (
    FlatValuesListIterable,
    ModelIterable,
    QuerySet,
    ValuesIterable,
    ValuesListIterable,
    get_related_populators,
)

# What a query gives, by the ORM's iterable class: model instances, tuples, single values or dicts.
_KINDS = {
    ModelIterable: "objects",
    ValuesListIterable: "tuples",
    FlatValuesListIterable: "flat",
    ValuesIterable: "dicts",
}


@dataclasses.dataclass(frozen=True)
class _Plan:
    kind: str  # one of _KINDS' values
    sql: str
    params: tuple
    slots: tuple[tuple[int, ...], ...]  # where each value goes among the parameters, in the order of `fields`
    compiler: object
    names: tuple[str, ...] = ()  # the keys of a values() query's dicts
    model: type[models.Model] | None = None
    init_list: tuple[str, ...] = ()
    start: int = 0
    end: int = 0
    populators: tuple = ()
    annotations: tuple[tuple[str, int], ...] = ()  # (name, column) of each annotate()d value, set on the instance


def _stand_in(field: models.Field) -> object:
    """A value of the field's type that no real query uses, unique to this compile."""
    if isinstance(field, models.ForeignKey):  # compared by the key it points at: give the related row's pk
        return _stand_in(field.target_field)
    if isinstance(field, models.DateTimeField):
        return dt.datetime(1901, 2, 3, 4, 5, 6, secrets.randbelow(10**6), tzinfo=dt.UTC)
    if isinstance(field, models.DateField):
        return dt.date(1901, 1, 1) + dt.timedelta(days=secrets.randbelow(20_000))
    if isinstance(field, models.IntegerField):  # the auto fields too
        return -(10**12) - secrets.randbelow(10**9)
    if isinstance(field, models.FloatField):
        return -1e12 - secrets.randbelow(10**9) - 0.5
    if isinstance(field, (models.CharField, models.TextField)):
        return f"prepared-{secrets.token_hex(8)}"
    raise TypeError(
        "Prepared takes values of char, text, integer, float, date, date-time and foreign key fields, not"
        f" {type(field).__name__}"
    )


class Prepared:
    """See the module's text. Thread-safe: the plans of a process are built once per database alias."""

    def __init__(self, build: Callable[..., QuerySet], **fields: models.Field):
        for field in fields.values():
            _stand_in(field)  # a field of a kind it cannot stand in for is refused here, at import
        self._build = build
        self._fields = fields
        self._plans: dict[str, _Plan] = {}
        self._lock = threading.Lock()

    def objects(self, *values, using: str = "default") -> list[models.Model]:
        """The query's model instances for these values (in the order of the fields given), as the ORM gives them."""
        plan, rows = self._run(values, using)
        if plan.kind != "objects":
            raise TypeError("objects() is for queries of model instances, rows() for values() and values_list()")
        found = []
        for row in plan.compiler.results_iter(results=[rows]):
            obj = plan.model.from_db(using, plan.init_list, row[plan.start : plan.end])
            for populator in plan.populators:
                populator.populate(row, obj)
            for name, column in plan.annotations:
                setattr(obj, name, row[column])
            found.append(obj)
        return found

    def rows(self, *values, using: str = "default") -> list:
        """The dicts, tuples or single values of a values() / values_list() / flat query for these values, as the
        ORM gives them."""
        plan, rows = self._run(values, using)
        if plan.kind == "objects":
            raise TypeError("rows() is for values() and values_list() queries, objects() for model instances")
        if plan.kind == "dicts":
            return [dict(zip(plan.names, row, strict=True)) for row in plan.compiler.results_iter(results=[rows])]
        if plan.kind == "flat":
            return [row[0] for row in plan.compiler.results_iter(results=[rows])]
        return list(plan.compiler.results_iter(results=[rows], tuple_expected=True))

    def _run(self, values: tuple, using: str) -> tuple[_Plan, list]:
        if len(values) != len(self._fields):
            raise TypeError(f"{len(self._fields)} values expected, {len(values)} given")
        plan = self._plans.get(using) or self._compile(using)
        connection = connections[using]
        params = list(plan.params)
        for slots, field, value in zip(plan.slots, self._fields.values(), values, strict=True):
            prepped = field.get_db_prep_value(value, connection, prepared=False)
            for slot in slots:
                params[slot] = prepped
        with connection.cursor() as cursor:
            cursor.execute(plan.sql, params)
            return plan, cursor.fetchall()

    def _compile(self, using: str) -> _Plan:
        with self._lock:
            if using in self._plans:
                return self._plans[using]
            connection = connections[using]
            first, second = self._stand_ins()
            queryset = self._build(**first)
            kind = _KINDS.get(queryset._iterable_class)
            if kind is None:
                raise TypeError("Prepared runs queries of model instances, values() or values_list() (not named)")
            if queryset._prefetch_related_lookups or queryset._known_related_objects:
                raise TypeError("Prepared runs one query: no prefetch_related(), no related manager's queryset")
            if queryset.query.extra_select:
                raise TypeError("Prepared runs queries without extra(select=...)")
            compiler = queryset.query.get_compiler(using=using)
            sql, params = compiler.as_sql()
            if compiler.has_extra_select:  # its rows would carry columns beyond the models' (ORM-side trimming)
                raise ValueError("Prepared runs queries without extra selected columns")
            again, params_again = self._build(**second).query.get_compiler(using=using).as_sql()
            if again != sql or len(params_again) != len(params):
                raise ValueError("a value of this query is folded into its SQL; Prepared cannot run it")
            slots = self._slots(params, params_again, first, second, connection)
            plan = _Plan(kind, sql, tuple(params), slots, compiler)
            if kind == "dicts":
                query = queryset.query
                names = query.selected or [*query.values_select, *query.annotation_select]
                plan = dataclasses.replace(plan, names=tuple(names))
            elif kind == "objects":
                klass_info, select = compiler.klass_info, compiler.select
                start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
                plan = dataclasses.replace(
                    plan,
                    model=klass_info["model"],
                    init_list=tuple(column[0].target.attname for column in select[start:end]),
                    start=start,
                    end=end,
                    populators=tuple(get_related_populators(klass_info, select, using)),
                    annotations=tuple(compiler.annotation_col_map.items()),
                )
            self._plans[using] = plan
            return plan

    def _stand_ins(self) -> tuple[dict[str, object], dict[str, object]]:
        """Two sets of stand-ins, every one of them different from every other (random ones may, rarely, meet)."""
        while True:
            first = {name: _stand_in(field) for name, field in self._fields.items()}
            second = {name: _stand_in(field) for name, field in self._fields.items()}
            every = [*first.values(), *second.values()]
            if len({(type(value), value) for value in every}) == len(every):
                return first, second

    def _slots(self, params, params_again, first: dict, second: dict, connection) -> tuple[tuple[int, ...], ...]:
        """Where each value goes: the parameters that are its stand-in in both compiles. Every other parameter must
        be the same in both, or it was made from a value on the way and the plan would run it stale."""

        def prep(name: str, value: object) -> object:
            return self._fields[name].get_db_prep_value(value, connection, prepared=False)

        mine = {name: (prep(name, first[name]), prep(name, second[name])) for name in self._fields}
        where: dict[str, list[int]] = {name: [] for name in self._fields}
        for i, (a, b) in enumerate(zip(params, params_again, strict=True)):
            if type(a) is type(b) and a == b:
                continue
            named = [n for n, (x, y) in mine.items() if type(a) is type(x) and a == x and type(b) is type(y) and b == y]
            if len(named) != 1:
                raise ValueError(f"parameter {i} of this query changes with its values but is none of them")
            where[named[0]].append(i)
        for name, found in where.items():
            if not found:
                raise ValueError(f"{name} must be a parameter of the compiled query; it is not one")
        return tuple(tuple(where[name]) for name in self._fields)
