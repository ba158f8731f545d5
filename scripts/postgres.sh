#!/usr/bin/env bash
# Install (Debian package), start and prepare the PostgreSQL server the test suite's second pass runs on.
# Idempotent: a server that is already installed, created and running is left as it is. Runs as root or
# through sudo. Ends with role `ci` (password `ci`, CREATEDB: each test gets its own database; member of
# pg_signal_backend: dropping a test database WITH (FORCE) may have to end an autovacuum worker on it) owning
# database `ci`, i.e. postgresql+psycopg://ci:ci@127.0.0.1:5432/ci
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
HOST=127.0.0.1
PORT=${PGPORT:-5432}

if pg_isready -q -h "$HOST" -p "$PORT" -t 2 2>/dev/null && PGPASSWORD=ci psql -h "$HOST" -p "$PORT" -U ci -d ci \
  -tAc "SELECT rolcreatedb AND pg_has_role('ci', 'pg_signal_backend', 'MEMBER') FROM pg_roles WHERE rolname = 'ci'" \
  2>/dev/null | grep -qx t; then
  exit 0  # already running and prepared (a developer's server, or a second `make test`)
fi

if ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
  echo "installing PostgreSQL (Debian package)"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
PGVER=$(ls /usr/lib/postgresql | sort -V | tail -1)
# An apt install does not start the server here (policy-rc.d, no systemd): create and start the cluster ourselves.
pg_lsclusters -h | grep -q "^$PGVER main " || $SUDO pg_createcluster "$PGVER" main >/dev/null
$SUDO pg_ctlcluster "$PGVER" main status >/dev/null 2>&1 || $SUDO pg_ctlcluster "$PGVER" main start
pg_isready -q -h "$HOST" -p "$PORT" -t 30

(cd / && $SUDO runuser -u postgres -- psql -p "$PORT" -v ON_ERROR_STOP=1 -q <<'SQL'
DO $$BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ci') THEN CREATE ROLE ci LOGIN CREATEDB PASSWORD 'ci';
  ELSE ALTER ROLE ci LOGIN CREATEDB PASSWORD 'ci'; END IF;
END$$;
GRANT pg_signal_backend TO ci;
SELECT 'CREATE DATABASE ci OWNER ci' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'ci')\gexec
SQL
)
echo "PostgreSQL $PGVER ready: postgresql+psycopg://ci:ci@$HOST:$PORT/ci"
