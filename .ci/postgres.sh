#!/usr/bin/env bash
# A throwaway PostgreSQL server for the history store's tests: Debian's `postgresql`
# (installed when missing), a cluster initialised in a temporary directory and started on a
# free loopback port as an unprivileged user (PostgreSQL refuses to run as root).
#
#   source .ci/postgres.sh && start_test_postgres   # exports SERVEBENCH_TEST_POSTGRES
#   stop_test_postgres                              # stops it and removes its directory
#
# Locally the history tests that need it print one `skipped:` line when the variable is unset.

start_test_postgres() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    apt-get update
    apt-get install -y postgresql
    bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  fi
  # Run the server as `postgres` (the package's user) when we are root, else as ourselves.
  local as=()
  if [ "$(id -u)" = 0 ]; then
    as=(runuser -u postgres --)
  fi
  SERVEBENCH_TEST_PG_DIR=$(mktemp -d /tmp/servebench-pg.XXXXXX)
  chmod 755 "$SERVEBENCH_TEST_PG_DIR"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$SERVEBENCH_TEST_PG_DIR"; fi
  "${as[@]}" "$bin/initdb" -D "$SERVEBENCH_TEST_PG_DIR/data" -U postgres --auth=trust \
    --no-sync >"$SERVEBENCH_TEST_PG_DIR/initdb.log" 2>&1 \
    || { cat "$SERVEBENCH_TEST_PG_DIR/initdb.log"; return 1; }
  local port started=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    port=$((40000 + RANDOM % 20000))
    if "${as[@]}" "$bin/pg_ctl" -D "$SERVEBENCH_TEST_PG_DIR/data" -w -t 60 \
        -l "$SERVEBENCH_TEST_PG_DIR/server.log" \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $SERVEBENCH_TEST_PG_DIR -c fsync=off -c max_connections=200" \
        start >/dev/null; then
      started=1
      break
    fi
  done
  [ -n "$started" ] || { cat "$SERVEBENCH_TEST_PG_DIR/server.log"; return 1; }
  SERVEBENCH_TEST_PG_BIN=$bin
  export SERVEBENCH_TEST_PG_DIR SERVEBENCH_TEST_PG_BIN
  export SERVEBENCH_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres"
  echo "PostgreSQL for the history tests: $SERVEBENCH_TEST_POSTGRES"
}

stop_test_postgres() {
  [ -n "${SERVEBENCH_TEST_PG_DIR:-}" ] || return 0
  local as=()
  if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); fi
  "${as[@]}" "$SERVEBENCH_TEST_PG_BIN/pg_ctl" -D "$SERVEBENCH_TEST_PG_DIR/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$SERVEBENCH_TEST_PG_DIR"
  unset SERVEBENCH_TEST_PG_DIR SERVEBENCH_TEST_POSTGRES
}
