// Package tooltest holds the one rule for tests that need an outside tool
// (fio, nvme-cli, FUSE, sh): when the tool is missing the test is skipped
// with the reason printed, and when FIOMIG_REQUIRE_TOOLS=1 (CI's .ci/run)
// it fails instead, so a missing install step never turns red into green.
//
// Only _test.go files import it. It imports the standard library only.
package tooltest
