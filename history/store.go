package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite" (pure Go, no cgo)
)

// DefaultDB is the store `fiomig history` opens without --db: an SQLite
// file beside the runs fiomig writes (out/ is where `fiomig run` puts them).
const DefaultDB = "out/history.db"

// Dialects of the SQL a Store speaks.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Store is a history database: SQLite through modernc.org/sqlite (pure Go:
// no cgo, no server) or PostgreSQL through github.com/jackc/pgx/v5's
// database/sql driver. Open migrates its schema to the latest version.
// A Store is safe for concurrent use, and so is the database for several
// processes at once (Add serialises its writers, see Add).
type Store struct {
	db      *sql.DB
	dialect string
	// where names the database in errors: the file, or the PostgreSQL
	// URL without its password.
	where string
}

// Open opens the history store dsn and brings its schema to the latest
// version (Migrations):
//   - "postgres://…" or "postgresql://…": a PostgreSQL server (pgx's
//     connection string: user, password, host, port, database, sslmode…);
//   - "" (DefaultDB), "sqlite:PATH" or a plain PATH: an SQLite file, created
//     with its directory when missing, in WAL mode with a 30 s busy
//     timeout and transactions that take the write lock at BEGIN
//     (_txlock=immediate), so concurrent writers wait instead of failing.
//
// Errors name the database; a database migrated by a newer fiomig (a schema
// version above the latest this one knows) is refused.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return open(ctx, dsn, len(Migrations), true)
}

// OpenExisting is Open for the verbs that only read (runs, trend, flakes,
// changes, compare --history): an SQLite file that does not exist is an
// error naming it, not a new empty store (a mistyped --db would otherwise
// show nothing and succeed). A PostgreSQL database is opened as by Open.
func OpenExisting(ctx context.Context, dsn string) (*Store, error) {
	return open(ctx, dsn, len(Migrations), false)
}

// open is Open (create: an SQLite file is created when missing) migrating
// to Migrations[:upTo] only (tests of the migrations start from an older
// schema).
func open(ctx context.Context, dsn string, upTo int, create bool) (*Store, error) {
	s := &Store{}
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, fmt.Errorf("history: --db: %w", err)
		}
		s.dialect, s.where = Postgres, u.Redacted()
		if s.db, err = sql.Open("pgx", dsn); err != nil {
			return nil, fmt.Errorf("history %s: %w", s.where, err)
		}
	default:
		path := strings.TrimPrefix(dsn, "sqlite:")
		if path == "" {
			path = DefaultDB
		}
		if _, err := os.Stat(path); !create && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no history store at %s (fiomig history add creates one; --db names the store)", path)
		}
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("history %s: %w", path, err)
			}
		}
		s.dialect, s.where = SQLite, path
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(30000)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "foreign_keys(1)")
		q.Set("_txlock", "immediate")
		var err error
		if s.db, err = sql.Open("sqlite", "file:"+path+"?"+q.Encode()); err != nil {
			return nil, fmt.Errorf("history %s: %w", path, err)
		}
	}
	if err := s.migrate(ctx, upTo); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Dialect is SQLite or Postgres.
func (s *Store) Dialect() string { return s.dialect }

// Where names the database: the SQLite file or the PostgreSQL URL without
// its password.
func (s *Store) Where() string { return s.where }

// Migration is one versioned step of the schema, with its SQL for each
// dialect (statements separated by ";\n").
type Migration struct {
	Version  int
	What     string
	SQLite   string
	Postgres string
}

// Migrations are the schema's versions in order; Open applies those a
// database lacks, each in its own transaction with the version recorded in
// schema_migrations. A step is never edited once released: a change is a
// new step.
var Migrations = []Migration{
	{Version: 1, What: "runs, their member runs (a sweep's seeds), check verdicts and figures",
		SQLite: `CREATE TABLE runs (
	id TEXT PRIMARY KEY,
	seq INTEGER NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	dir TEXT NOT NULL,
	started_unix_s REAL NOT NULL,
	added_unix_s REAL NOT NULL,
	commit_sha TEXT NOT NULL,
	branch TEXT NOT NULL,
	cluster TEXT NOT NULL,
	image TEXT NOT NULL,
	seeds TEXT NOT NULL,
	config TEXT NOT NULL,
	verdict TEXT NOT NULL,
	digest TEXT NOT NULL
);
CREATE TABLE members (
	run_id TEXT NOT NULL REFERENCES runs(id),
	member INTEGER NOT NULL,
	seed INTEGER NOT NULL,
	dir TEXT NOT NULL,
	verdict TEXT NOT NULL,
	plan BLOB NOT NULL,
	summary BLOB NOT NULL,
	PRIMARY KEY (run_id, member)
);
CREATE TABLE checks (
	run_id TEXT NOT NULL REFERENCES runs(id),
	member INTEGER NOT NULL,
	name TEXT NOT NULL,
	verdict TEXT NOT NULL,
	PRIMARY KEY (run_id, member, name)
);
CREATE TABLE figures (
	run_id TEXT NOT NULL REFERENCES runs(id),
	name TEXT NOT NULL,
	value REAL NOT NULL,
	PRIMARY KEY (run_id, name)
)`,
		Postgres: `CREATE TABLE runs (
	id TEXT PRIMARY KEY,
	seq BIGINT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	dir TEXT NOT NULL,
	started_unix_s DOUBLE PRECISION NOT NULL,
	added_unix_s DOUBLE PRECISION NOT NULL,
	commit_sha TEXT NOT NULL,
	branch TEXT NOT NULL,
	cluster TEXT NOT NULL,
	image TEXT NOT NULL,
	seeds TEXT NOT NULL,
	config TEXT NOT NULL,
	verdict TEXT NOT NULL,
	digest TEXT NOT NULL
);
CREATE TABLE members (
	run_id TEXT NOT NULL REFERENCES runs(id),
	member INTEGER NOT NULL,
	seed BIGINT NOT NULL,
	dir TEXT NOT NULL,
	verdict TEXT NOT NULL,
	plan BYTEA NOT NULL,
	summary BYTEA NOT NULL,
	PRIMARY KEY (run_id, member)
);
CREATE TABLE checks (
	run_id TEXT NOT NULL REFERENCES runs(id),
	member INTEGER NOT NULL,
	name TEXT NOT NULL,
	verdict TEXT NOT NULL,
	PRIMARY KEY (run_id, member, name)
);
CREATE TABLE figures (
	run_id TEXT NOT NULL REFERENCES runs(id),
	name TEXT NOT NULL,
	value DOUBLE PRECISION NOT NULL,
	PRIMARY KEY (run_id, name)
)`},
	{Version: 2, What: "an index for the series order (started, then seq) and for labels",
		SQLite: `CREATE INDEX runs_order ON runs (started_unix_s, seq);
CREATE INDEX runs_labels ON runs (branch, cluster, commit_sha)`,
		Postgres: `CREATE INDEX runs_order ON runs (started_unix_s, seq);
CREATE INDEX runs_labels ON runs (branch, cluster, commit_sha)`},
}

// lockKey is the PostgreSQL advisory lock every writer of a history
// database takes for its transaction ("fiomig" in ASCII).
const lockKey = 0x66696f6d6967

// begin starts a write transaction that holds the database's writer lock
// until it ends: SQLite's RESERVED lock at BEGIN (_txlock=immediate; other
// writers wait up to the busy timeout), PostgreSQL's transaction-level
// advisory lock lockKey (pg_advisory_xact_lock: others wait).
func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("history %s: begin: %w", s.where, err)
	}
	if s.dialect == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockKey)); err != nil {
			tx.Rollback()
			return nil, fmt.Errorf("history %s: lock: %w", s.where, err)
		}
	}
	return tx, nil
}

// migrate applies Migrations[:upTo] that the database lacks, under the
// writer lock, and refuses a database of a later version.
func (s *Store) migrate(ctx context.Context, upTo int) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, what TEXT NOT NULL, applied_unix_s DOUBLE PRECISION NOT NULL)`); err != nil {
		return fmt.Errorf("history %s: schema_migrations: %w", s.where, err)
	}
	var have sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&have); err != nil {
		return fmt.Errorf("history %s: schema version: %w", s.where, err)
	}
	latest := Migrations[len(Migrations)-1].Version
	if int(have.Int64) > latest {
		return fmt.Errorf("history %s: schema version %d is newer than this fiomig's %d: use a newer fiomig", s.where, have.Int64, latest)
	}
	for _, m := range Migrations[:upTo] {
		if m.Version <= int(have.Int64) {
			continue
		}
		stmts := m.SQLite
		if s.dialect == Postgres {
			stmts = m.Postgres
		}
		for _, st := range strings.Split(stmts, ";\n") {
			if _, err := tx.ExecContext(ctx, st); err != nil {
				return fmt.Errorf("history %s: schema version %d (%s): %w", s.where, m.Version, m.What, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, what, applied_unix_s) VALUES ($1, $2, $3)",
			m.Version, m.What, unixNow()); err != nil {
			return fmt.Errorf("history %s: schema version %d: %w", s.where, m.Version, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history %s: schema: %w", s.where, err)
	}
	return nil
}

// SchemaVersion returns the database's schema version.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&v); err != nil {
		return 0, fmt.Errorf("history %s: schema version: %w", s.where, err)
	}
	return int(v.Int64), nil
}

func unixNow() float64 { return float64(time.Now().UnixMicro()) / 1e6 }

// errNotFound is returned by lookups of a run id the store lacks.
var errNotFound = errors.New("not in the history")
