package reports

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// placeholderSVG stands in for plots/pause.svg in the golden page, so the
// golden file shows the page and not gonum/plot's drawing.
var placeholderSVG = []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="8" height="4"><rect width="8" height="4"/></svg>`)

// goldenFixture is fixture with an inconclusive check whose detail holds
// markup characters, and a pause window still open at the last sample.
func goldenFixture() (record.Plan, record.Summary) {
	plan, sum := fixture()
	for i, c := range sum.Checks {
		if c.Name == "faults-landed" {
			sum.Checks[i].Verdict = record.Inconclusive
			sum.Checks[i].Detail = `fault "kill-node" on node-2 left no evidence <none> & no kernel line`
		}
	}
	hp := sum.Migrations[1].Hosts["host-b"]
	hp.OpenWindow = true
	sum.Migrations[1].Hosts["host-b"] = hp
	return plan, sum
}

// TestHTMLGolden compares report.html with testdata/report.golden.html;
// regenerate with `go test ./reports -run Golden -update`.
func TestHTMLGolden(t *testing.T) {
	plan, sum := goldenFixture()
	got, err := HTML(plan, WithStats(sum), placeholderSVG)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "report.golden.html", got)
}

// TestHTMLSameContentAsMarkdown: every over-bound sentence of report.md,
// the seed, the command, the leak and missing-endpoint rows, the figures
// and the percentile method appear in report.html too.
func TestHTMLSameContentAsMarkdown(t *testing.T) {
	plan, sum := goldenFixture()
	sum = WithStats(sum)
	page, err := HTML(plan, sum, placeholderSVG)
	if err != nil {
		t.Fatal(err)
	}
	md := string(Markdown(plan, sum))
	over := OverBound(plan, sum)
	if len(over) != 2 {
		t.Fatalf("fixture: %d over-bound entries, want 2 (m2 on host-b, m2 freezes)", len(over))
	}
	want := []string{
		"<li><b>Seed</b> 42</li>",
		"<code>fiomig run --seed 42 --migrations 2 --cutover-pause 7</code>",
		"CUTOVER_PAUSE_CRIT_S = 5 s, CUTOVER_FREEZES_ALLOWED = 1; attribution margin 30 s; settle 60 s",
		`host-a 3 s, host-b <span class="over">7.25 s</span> (open)`,
		`<td>host-a</td><td>nvme4</td><td><code>vol2</code></td><td><code>10.0.0.1:4420</code></td><td>connecting</td><td>not-live</td>`,
		`<td>host-b</td><td><code>vol2</code></td><td><code>10.0.0.3:4428</code></td>`,
		`<tr><td>vol2</td><td><code>vol2</code></td><td><code>nqn.2023-02.io.simplyblock:vol2</code></td><td>1</td><td>host-a, host-b</td></tr>`,
		"p50 2.625 s, p95 6.6125 s, max 7.25 s",
		"Percentile method: " + html.EscapeString(PercentileMethod),
		`<td class="num">[130, 131.5] s</td>`,
		`<h2>Leaked controllers — <span class="fail">fail</span></h2>`,
		`<td>faults-landed</td><td><span class="inconclusive">inconclusive</span></td>`,
	}
	for _, o := range over {
		if !strings.Contains(md, "- "+o+"\n") {
			t.Errorf("report.md lacks over-bound entry %q", o)
		}
		want = append(want, `<li class="over">`+html.EscapeString(o)+"</li>")
	}
	for _, w := range want {
		if !bytes.Contains(page, []byte(w)) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	if bytes.Contains(page, []byte(`<span class="over">2.25 s</span>`)) {
		t.Errorf("report.html marks m1's 2.25 s as over the bound")
	}
}

// TestHTMLEscapesUntrustedStrings: markup in NQNs, hosts, details and the
// command comes out as text; the page loads nothing and runs nothing.
func TestHTMLEscapesUntrustedStrings(t *testing.T) {
	plan, _ := fixture()
	plan.Command = `fiomig run --seed 1 </code><b>bold</b>`
	evil := `nqn.evil:<script>alert(1)</script>`
	sum := record.Summary{
		Seed: 1, Verdict: `fail"><i>`,
		Checks: []record.CheckResult{{Name: "pause-bound", Verdict: record.Fail, Detail: `<img src=x onerror=alert(1)> & "q"`}},
		Migrations: []record.MigrationSummary{{ID: `m<1>`, NQN: evil, Outcome: "Completed", Freezes: 1,
			Hosts: map[string]record.HostPauses{`h"><svg onload=alert(1)>`: {LongestPauseS: 9, Freezes: 1, Windows: [][2]float64{{1, 10}}}}}},
		LeakedControllers: []record.Leak{{Host: "h", Controller: "nvme1", NQN: evil, Address: "10.0.0.1:4420", State: "live", Kind: "no-namespace"}},
		MissingEndpoints:  []record.MissingEndpoint{{Host: "h", NQN: evil, Endpoint: "[fd00::1]:4420"}},
	}
	page, err := HTML(plan, WithStats(sum), placeholderSVG)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "<img src=x", "<b>bold", `"><i>`, "<svg onload", "<1>", "<link", "http://", "https://", "@import"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	for _, good := range []string{
		"nqn.evil:&lt;script&gt;alert(1)&lt;/script&gt;",
		"&lt;img src=x onerror=alert(1)&gt; &amp; &#34;q&#34;",
		"&lt;/code&gt;&lt;b&gt;bold&lt;/b&gt;",
		"m&lt;1&gt;",
		`<span class="other">fail&#34;&gt;&lt;i&gt;</span>`,
	} {
		if !bytes.Contains(page, []byte(good)) {
			t.Errorf("report.html lacks escaped %q", good)
		}
	}
}

// TestHTMLEmpty: a summary with nothing in it still renders every section
// with its "none" sentence — the leak and completeness sections say their
// check was not evaluated rather than claim a clean host; without plot
// bytes the page links the PNG.
func TestHTMLEmpty(t *testing.T) {
	plan, _ := fixture()
	page, err := HTML(plan, WithStats(record.Summary{Verdict: record.Inconclusive}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<span class="badge inconclusive">INCONCLUSIVE</span>`,
		"No check was evaluated.", "No migration in the timeline.", "None: every migration and host paused at most 5 s",
		"No migration with a consumer host.", "<p>Not evaluated.</p>", "No (migration, host) pair to summarise.",
		`<h2>Leaked controllers — <span class="other">not evaluated</span></h2>`,
		`Not embedded: <a href="plots/pause.png">`,
	} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("empty report.html lacks %q", want)
		}
	}
	if bytes.Contains(page, []byte("data:image")) {
		t.Errorf("empty report.html embeds an image without plot bytes")
	}
}
