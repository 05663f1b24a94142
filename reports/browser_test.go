package reports

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/record"
)

// browser starts one headless Chromium (Debian package chromium; `make
// tools` installs it) for the test, as root needs it: no sandbox, no GPU,
// nothing fetched in the background, a fresh profile. A missing chromium
// skips the test, or fails it under FIOMIG_REQUIRE_TOOLS=1
// (internal/tooltest).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := tooltest.Command(t, "chromium")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	return bctx
}

// pageState is what the page shows, as read by script in the browser.
type pageState struct {
	Verdict   string     `json:"verdict"`
	Text      string     `json:"text"`
	Figures   []figState `json:"figures"`
	FaultsTag string     `json:"faultsTag"`
	FaultHead []string   `json:"faultHead"`
	FaultRows [][]string `json:"faultRows"`
	Visible   bool       `json:"faultsVisible"`
	Title     string     `json:"title"`
}

type figState struct {
	ID       string  `json:"id"`
	Rendered bool    `json:"rendered"`
	Width    float64 `json:"width"`
	Natural  int     `json:"natural"`
}

// readPage waits for the load event (every embedded image decoded or
// failed), then reads the page.
const readPage = `new Promise(done => document.readyState === 'complete' ? done() : addEventListener('load', () => done())).then(() => {
  const v = document.getElementById('verdict');
  const f = document.getElementById('faults');
  return {
    title: document.title,
    verdict: v ? v.dataset.verdict : '',
    text: v ? v.innerText : '',
    figures: [...document.querySelectorAll('figure.plot')].map(fig => {
      const img = fig.querySelector('img');
      return {id: fig.dataset.plot,
        rendered: !!img && img.complete && img.naturalWidth > 0,
        natural: img ? img.naturalWidth : 0,
        width: img ? img.getBoundingClientRect().width : 0};
    }),
    faultsTag: f ? f.tagName : '',
    faultHead: f ? [...f.querySelectorAll('thead th')].map(c => c.innerText) : [],
    faultRows: f ? [...f.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.innerText)) : [],
    faultsVisible: f ? f.getBoundingClientRect().height > 0 : false,
  };
})`

// expectedPage is what a report must show, derived from the run record
// and not from the page: the verdict, one figure per plot Write draws
// (pause, ecdf and one swimlane per migration of summary.json) and one
// faults-table row per fault injected in the timeline.
type expectedPage struct {
	Verdict string
	Plots   []string
	Faults  []string // "fault@target", in timeline order
}

func expectFrom(sum record.Summary, timeline []record.Line) expectedPage {
	e := expectedPage{Verdict: sum.Verdict, Plots: []string{"pause", "ecdf"}}
	for _, m := range sum.Migrations {
		e.Plots = append(e.Plots, "swimlane-"+m.ID)
	}
	for _, l := range timeline {
		if l.Kind == record.KindFault && l.Action == "inject" {
			e.Faults = append(e.Faults, l.Fault+"@"+l.Target)
		}
	}
	return e
}

// checkInBrowser opens file path in a new tab of the browser bctx and
// returns every way the page falls short of want: a different verdict, a
// plot missing, extra or not rendered (an image that did not decode or has
// no width on the page), a faults table missing, hidden or with other
// rows, or any console error, uncaught exception or error log entry.
func checkInBrowser(bctx context.Context, path string, want expectedPage) []string {
	ctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	var mu sync.Mutex
	var consoleErrs []string
	listenErr := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, fmt.Sprint(a.Value, a.Description))
				}
				consoleErrs = append(consoleErrs, "console."+string(ev.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			consoleErrs = append(consoleErrs, "exception: "+ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				consoleErrs = append(consoleErrs, "log error: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	})
	if listenErr != nil {
		return []string{"listen to the console: " + listenErr.Error()}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return []string{err.Error()}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+abs), chromedp.WaitReady("body")); err != nil {
		return []string{"load " + abs + ": " + err.Error()}
	}
	st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](readPage, chromedp.EvalAwaitPromise))
	if err != nil {
		return []string{"read " + abs + ": " + err.Error()}
	}
	var problems []string
	if st.Verdict != want.Verdict {
		problems = append(problems, fmt.Sprintf("verdict %q, want %q", st.Verdict, want.Verdict))
	}
	if !strings.HasPrefix(st.Text, "Verdict: "+want.Verdict) {
		problems = append(problems, fmt.Sprintf("verdict line %q does not start with %q", st.Text, "Verdict: "+want.Verdict))
	}
	seen := map[string]bool{}
	for _, f := range st.Figures {
		seen[f.ID] = true
		switch {
		case !slices.Contains(want.Plots, f.ID):
			problems = append(problems, "unexpected plot "+f.ID)
		case !f.Rendered:
			problems = append(problems, "plot "+f.ID+" not rendered (no image, or it did not decode)")
		case f.Width < 100:
			problems = append(problems, fmt.Sprintf("plot %s is %.0f px wide on the page", f.ID, f.Width))
		}
	}
	for _, id := range want.Plots {
		if !seen[id] {
			problems = append(problems, "plot "+id+" missing from the page")
		}
	}
	if len(want.Faults) > 0 {
		// Columns by their header: the kind ("Fault" or "Kind") and "Target".
		kind, target := -1, -1
		for i, h := range st.FaultHead {
			switch strings.TrimSpace(h) {
			case "Fault", "Kind":
				kind = i
			case "Target":
				target = i
			}
		}
		var got []string
		for _, r := range st.FaultRows {
			if kind >= 0 && target >= 0 && len(r) > max(kind, target) {
				got = append(got, strings.TrimSpace(r[kind])+"@"+strings.TrimSpace(r[target]))
			}
		}
		switch {
		case st.FaultsTag != "TABLE":
			problems = append(problems, "no faults table (#faults is "+st.FaultsTag+")")
		case !st.Visible:
			problems = append(problems, "the faults table is not visible")
		case !slices.Equal(got, want.Faults):
			problems = append(problems, fmt.Sprintf("faults table rows %v, want %v", got, want.Faults))
		}
	}
	mu.Lock()
	problems = append(problems, consoleErrs...)
	mu.Unlock()
	return problems
}

// writeBrowserFixture writes the swimlane fixture's full report into a
// new directory and returns it with what the page must show.
func writeBrowserFixture(t *testing.T) (string, expectedPage) {
	t.Helper()
	plan, sum, tl := swimlaneFixture()
	sum.Checks = []record.CheckResult{{Name: "pause-bound", Verdict: record.Pass, Detail: "ok"}, {Name: "freezes", Verdict: record.Fail, Detail: "m1: 2 freezes"}}
	sum.Verdict = record.Fail
	dir := t.TempDir()
	if err := WriteRun(dir, Input{Plan: plan, Summary: sum, Timeline: tl}); err != nil {
		t.Fatal(err)
	}
	return dir, expectFrom(sum, tl)
}

// TestReportHTMLInChromium opens report.html in headless Chromium over
// file:// (nothing else is fetched: the page is self-contained) and checks
// that the verdict, every plot and the faults table rendered without a
// console error; then that the same check fails on a page with one plot
// removed, one plot's image corrupted, and the faults table removed.
func TestReportHTMLInChromium(t *testing.T) {
	bctx := browser(t)
	dir, want := writeBrowserFixture(t)
	page := filepath.Join(dir, HTMLReportFile)
	if problems := checkInBrowser(bctx, page, want); len(problems) > 0 {
		t.Fatalf("report.html in Chromium:\n%s", strings.Join(problems, "\n"))
	}
	orig, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, wantProblem string
		doctor            func(string) string
	}{
		{"a swimlane removed", "plot swimlane-m1 missing from the page", func(s string) string {
			return regexp.MustCompile(`(?s)<figure class="plot" data-plot="swimlane-m1".*?</figure>`).ReplaceAllString(s, "")
		}},
		{"the ECDF image corrupted", "plot ecdf not rendered", func(s string) string {
			return regexp.MustCompile(`(data-plot="ecdf"[^>]*>\s*<img src="data:image/png;base64,)`).ReplaceAllString(s, "${1}!!!!")
		}},
		{"the faults table removed", "no faults table", func(s string) string {
			return regexp.MustCompile(`(?s)<table id="faults">.*?</table>`).ReplaceAllString(s, "")
		}},
		{"a script error", "exception", func(s string) string {
			return strings.Replace(s, "</body>", "<script>undefinedFunction()</script></body>", 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doctored := tc.doctor(string(orig))
			if doctored == string(orig) {
				t.Fatal("the doctoring changed nothing: the page's markup moved")
			}
			path := filepath.Join(t.TempDir(), HTMLReportFile)
			if err := os.WriteFile(path, []byte(doctored), 0o644); err != nil {
				t.Fatal(err)
			}
			problems := checkInBrowser(bctx, path, want)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.wantProblem) }) {
				t.Errorf("doctored page (%s): problems %q, want one containing %q", tc.name, problems, tc.wantProblem)
			}
		})
	}
}
