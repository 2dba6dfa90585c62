"""Statements compiled once and run on the driver's own cursor, for the few that nearly
every request runs.

SQLAlchemy's execution of a statement it has already compiled still costs 20-60 µs
(the session's and the connection's bookkeeping, events, result objects), where SQLite
answers the statement itself in 3-10: on the paths every reservation request takes
(sign-in, admission, loading and storing a reservation) that was most of what a
saturated server did. A `Prepared` statement is compiled once per dialect, and its
parameters and rows go through the processors SQLAlchemy itself would apply (UTC times,
JSON, booleans: each column type's `bind_processor` and `result_processor` for the
dialect), so what is stored and read back is the same either way. Every parameter must
be given: column defaults are not filled in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Column, Dialect, Engine, Table, insert
from sqlalchemy.orm import Session, configure_mappers
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.selectable import Select

from longhaul.db.driver import under
from longhaul.db.engine import outside_transaction

T = TypeVar("T")
Processor = Callable[[Any], Any] | None
Row = dict[str, Any]

_ASKED = object()


@dataclass(frozen=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    """The parameters, in the order the SQL takes them."""
    positional: bool
    binds: tuple[Processor, ...]
    given: tuple[Any, ...]
    """Each parameter's value written into the statement (`x == 1`), else `_ASKED`."""
    columns: tuple[str, ...]
    """What each row holds, in order (a SELECT's columns, or what DML returns)."""
    results: tuple[Processor, ...]

    def parameters(self, values: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        processed = []
        for name, bind, given in zip(self.names, self.binds, self.given, strict=True):
            value = values.get(name, given)
            if value is _ASKED:
                raise KeyError(f"no value for the statement's parameter {name!r}")
            processed.append(value if bind is None else bind(value))
        return (
            tuple(processed) if self.positional else dict(zip(self.names, processed, strict=True))
        )

    def row(self, values: tuple[Any, ...]) -> Row:
        return {
            name: value if result is None or value is None else result(value)
            for name, result, value in zip(self.columns, self.results, values, strict=True)
        }


class Prepared:
    """One statement, compiled for each dialect it meets.

    `sets` names the columns an INSERT or UPDATE gives values for (without it, an INSERT
    would take a parameter for every column of its table).
    """

    def __init__(self, statement: Select[Any] | UpdateBase, sets: Iterable[str] = ()) -> None:
        self.statement = statement
        self.sets = list(sets)
        self._compiled: dict[str, _Compiled] = {}

    @classmethod
    def insert(cls, table: Table, *returning: Column[Any]) -> Prepared:
        """An INSERT of every column but the key, returning `returning`."""
        statement = insert(table).returning(*returning) if returning else insert(table)
        return cls(statement, [c.name for c in table.c if not c.primary_key])

    def first(self, session: Session, **values: Any) -> Row | None:
        """The first row, or None."""
        return self._row(*self._run(session, values))

    def all(self, session: Session, **values: Any) -> list[Row]:
        compiled, cursor = self._run(session, values)
        return [compiled.row(found) for found in cursor.fetchall()]

    def scalar(self, session: Session, **values: Any) -> Any:
        """The first column of the one row there must be."""
        row = self.first(session, **values)
        if row is None:
            raise LookupError(f"no row from {self.statement}")
        return next(iter(row.values()))

    def count(self, session: Session, **values: Any) -> int:
        """Run a statement that returns nothing; how many rows it changed."""
        rowcount: int = self._run(session, values)[1].rowcount
        return rowcount

    def later(self, session: Session, rows: Iterable[Mapping[str, Any]]) -> None:
        """Run a statement whose results nobody reads once for each of `rows`: in a
        PostgreSQL write transaction with its next statement or its COMMIT, in that round
        trip (`longhaul.db.driver.Under.execute_later`); elsewhere at once."""
        found = under(session)
        compiled = self.compiled(found.dialect)
        found.execute_later(compiled.sql, [compiled.parameters(r) for r in rows])

    def first_on(self, engine: Engine, **values: Any) -> Row | None:
        """`first` on a connection of its own from the engine's pool, in no transaction:
        for a lone read."""
        compiled = self.compiled(engine.dialect)
        with outside_transaction(engine) as connection:
            cursor = connection.cursor()
            cursor.execute(compiled.sql, compiled.parameters(values))
            return self._row(compiled, cursor)

    def compiled(self, dialect: Dialect) -> _Compiled:
        found = self._compiled.get(dialect.name)
        if found is None:
            found = self._compiled[dialect.name] = self._compile(dialect)
        return found

    def _run(self, session: Session, values: Mapping[str, Any]) -> tuple[_Compiled, Any]:
        found = under(session)
        compiled = self.compiled(found.dialect)
        return compiled, found.execute(compiled.sql, compiled.parameters(values))

    @staticmethod
    def _row(compiled: _Compiled, cursor: Any) -> Row | None:
        found = cursor.fetchone()
        return None if found is None else compiled.row(found)

    def _compile(self, dialect: Dialect) -> _Compiled:
        compiled = self.statement.compile(dialect=dialect, column_keys=self.sets or None)
        if compiled.escaped_bind_names:
            raise ValueError(f"parameter names that need escaping: {compiled.escaped_bind_names}")
        names = tuple(compiled.positiontup or ()) if compiled.positional else tuple(compiled.binds)
        params = [compiled.binds[name] for name in names]
        binds = tuple(p.type.dialect_impl(dialect).bind_processor(dialect) for p in params)
        given = tuple(
            _ASKED if p.required or p.value is None else p.effective_value for p in params
        )
        returned = self.statement.exported_columns
        columns = tuple(str(c.key) for c in returned)
        results = tuple(
            c.type.dialect_impl(dialect).result_processor(dialect, None) for c in returned
        )
        return _Compiled(
            compiled.string, names, compiled.positional, binds, given, columns, results
        )


def made(cls: type[T], row: Mapping[str, Any]) -> T:
    """An instance of a mapped class holding `row`, set as the ORM's loading sets it (no
    change events: 1 µs where the constructor took 17); no session knows it."""
    mapper = cls.__mapper__  # type: ignore[attr-defined]
    if not mapper.configured:  # as the constructor would (it is what sets attributes up)
        configure_mappers()
    instance: T = mapper.class_manager.new_instance()
    instance.__dict__.update(row)
    return instance
