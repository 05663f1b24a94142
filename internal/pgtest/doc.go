// Package pgtest starts a real PostgreSQL server for a test: Debian's
// postgresql package (installed by `make tools`), a fresh cluster made by
// initdb in a temporary directory, listening on a free loopback port and
// a private socket directory, run as the "postgres" user when the test
// runs as root (the server refuses root), stopped and removed at the end
// of the test. A missing server applies internal/tooltest's rule: skip
// with the reason, or fail under FIOMIG_REQUIRE_TOOLS=1.
//
// Only _test.go files import it. It imports the standard library and
// internal/tooltest only.
package pgtest
