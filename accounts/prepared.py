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

A `values_list()` query (plain fields, no annotations) gives its tuples through `rows()` instead.

Each value is named by the model field it is compared with, and prepared for the database as the ORM would
(`get_db_prep_value`). The query is built once with a stand-in for each value that must come back exactly once
among the compiled parameters; a shape where one does not (a value used twice, folded into the SQL, or changed on
the way) is refused at its first call, never run with the wrong parameters.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import secrets
import threading
from collections.abc import Callable

from django.db import connections, models
from django.db.models.query import QuerySet, get_related_populators


@dataclasses.dataclass(frozen=True)
class _Plan:
    tuples: bool  # a values_list() query: rows() gives its tuples; otherwise objects() gives model instances
    sql: str
    params: tuple
    slots: tuple[int, ...]  # where each value goes among the parameters, in the order of `fields`
    compiler: object
    model: type[models.Model]
    init_list: tuple[str, ...]
    start: int
    end: int
    populators: tuple
    annotations: tuple[tuple[str, int], ...]  # (name, column) of each annotate()d value, set on the instance


def _stand_in(field: models.Field) -> object:
    """A value of the field's type that no real query uses, unique to this compile."""
    if isinstance(field, models.ForeignKey):  # compared by the key it points at: give the related row's pk
        return _stand_in(field.target_field)
    if isinstance(field, models.DateTimeField):
        return dt.datetime(1901, 2, 3, 4, 5, 6, secrets.randbelow(10**6), tzinfo=dt.UTC)
    if isinstance(field, models.IntegerField):  # the auto fields too
        return -(10**12) - secrets.randbelow(10**9)
    if isinstance(field, (models.CharField, models.TextField)):
        return f"prepared-{secrets.token_hex(8)}"
    raise TypeError(
        f"Prepared takes values of char, text, integer, date-time and foreign key fields, not {type(field).__name__}"
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
        plan, rows = self._run(values, using, tuples=False)
        found = []
        for row in plan.compiler.results_iter(results=[rows]):
            obj = plan.model.from_db(using, plan.init_list, row[plan.start : plan.end])
            for populator in plan.populators:
                populator.populate(row, obj)
            for name, column in plan.annotations:
                setattr(obj, name, row[column])
            found.append(obj)
        return found

    def rows(self, *values, using: str = "default") -> list[tuple]:
        """The tuples of a values_list() query for these values, as the ORM gives them."""
        plan, rows = self._run(values, using, tuples=True)
        return list(plan.compiler.results_iter(results=[rows], tuple_expected=True))

    def _run(self, values: tuple, using: str, *, tuples: bool) -> tuple[_Plan, list]:
        if len(values) != len(self._fields):
            raise TypeError(f"{len(self._fields)} values expected, {len(values)} given")
        plan = self._plans.get(using) or self._compile(using)
        if plan.tuples != tuples:
            raise TypeError("rows() is for values_list() queries, objects() for model instances")
        connection = connections[using]
        params = list(plan.params)
        for slot, field, value in zip(plan.slots, self._fields.values(), values, strict=True):
            params[slot] = field.get_db_prep_value(value, connection, prepared=False)
        with connection.cursor() as cursor:
            cursor.execute(plan.sql, params)
            return plan, cursor.fetchall()

    def _compile(self, using: str) -> _Plan:
        with self._lock:
            if using in self._plans:
                return self._plans[using]
            connection = connections[using]
            stand_ins = {name: _stand_in(field) for name, field in self._fields.items()}
            queryset = self._build(**stand_ins)
            tuples = queryset._iterable_class is models.query.ValuesListIterable
            if tuples and (queryset.query.annotation_select or queryset.query.extra_select):
                raise TypeError("Prepared runs values_list() queries of plain fields only (no annotations)")
            if not tuples and (
                queryset._fields is not None or queryset._iterable_class is not models.query.ModelIterable
            ):
                raise TypeError("Prepared runs queries of model instances or values_list() tuples (no values())")
            if queryset._prefetch_related_lookups or queryset._known_related_objects:
                raise TypeError("Prepared runs one query: no prefetch_related(), no related manager's queryset")
            compiler = queryset.query.get_compiler(using=using)
            sql, params = compiler.as_sql()
            if compiler.has_extra_select:  # its rows would carry columns beyond the models' (ORM-side trimming)
                raise ValueError("Prepared runs queries without extra selected columns")
            slots = []
            for name, field in self._fields.items():
                prepped = field.get_db_prep_value(stand_ins[name], connection, prepared=False)
                where = [i for i, param in enumerate(params) if type(param) is type(prepped) and param == prepped]
                if len(where) != 1:
                    raise ValueError(f"{name} must be one parameter of the compiled query; it is {len(where)}")
                slots.append(where[0])
            if tuples:
                plan = _Plan(tuples, sql, tuple(params), tuple(slots), compiler, None, (), 0, 0, (), ())
                self._plans[using] = plan
                return plan
            klass_info, select = compiler.klass_info, compiler.select
            start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
            plan = _Plan(
                tuples=False,
                sql=sql,
                params=tuple(params),
                slots=tuple(slots),
                compiler=compiler,
                model=klass_info["model"],
                init_list=tuple(column[0].target.attname for column in select[start:end]),
                start=start,
                end=end,
                populators=tuple(get_related_populators(klass_info, select, using)),
                annotations=tuple(compiler.annotation_col_map.items()),
            )
            self._plans[using] = plan
            return plan
