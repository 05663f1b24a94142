package fiomig_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestMakeHelpPrintsNoMakeSyntax: make help prints each target's "## "
// text as written (awk, no make expansion), so a $(VAR) in it reaches the
// reader literally (issue 27 item 9: "$(OUT)"); every target's text must
// be plain words.
func TestMakeHelpPrintsNoMakeSyntax(t *testing.T) {
	b, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	target := regexp.MustCompile(`^[a-z0-9-]+:.*## (.*)$`) // the lines make help's grep picks
	n := 0
	for i, line := range strings.Split(string(b), "\n") {
		m := target.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n++
		if strings.Contains(m[1], "$(") || strings.Contains(m[1], "${") {
			t.Errorf("Makefile:%d: make help would print %q literally", i+1, m[1])
		}
	}
	if n < 10 {
		t.Errorf("found %d documented targets in the Makefile, want the help's dozen or more", n)
	}
}
