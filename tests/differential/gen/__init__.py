"""The statement generator behind tests/differential/generate.py.

  types.py       CQL types, drawing values, rendering them as literals
  schema.py      drawing user types and tables (plain, counter, indexed) and their DDL
  statements.py  drawing DML / SELECT / BATCH / invalid statements over a schema (`Stmt`)
  runner.py      executing a Stmt on a session, comparing two outcomes, naming the difference

Drawing never depends on results: one seed gives one statement list.
"""
