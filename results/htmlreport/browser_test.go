package htmlreport

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium returns the path of a Chromium or Chrome, or skips t.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium: install Debian's chromium package (.ci/run does)")
	return ""
}

// TestBrowser opens the report in headless Chromium, as a person would,
// and checks that it loads without a console message, an exception or a
// failed or outgoing request, and that every plot decoded; it saves a
// full-page screenshot (the path is logged; REACTORLAB_SCREENSHOT_DIR gets
// a copy).
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	f := newFixture(t)
	pg := openInBrowser(t, exe, f.render(t))
	if want := f.latencyPlots + barPlots; len(pg.Images) != want {
		t.Errorf("page has %d images, want %d", len(pg.Images), want)
	}
	for i, im := range pg.Images {
		if !im.Complete || im.Width == 0 || im.Height == 0 {
			t.Errorf("image %d (%s) did not load: %+v", i, im.Plot, im)
		}
	}
	if !strings.Contains(pg.Title, "fixture") {
		t.Errorf("title %q", pg.Title)
	}
	// The hostile cell ID must be text on the page, and no script is there
	// to run.
	if !strings.Contains(pg.Text, hostile) {
		t.Errorf("the hostile cell ID is not shown as text")
	}
	if pg.Scripts != 0 {
		t.Errorf("page has %d scripts, want none", pg.Scripts)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	if err := os.WriteFile(shot, pg.PNG, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (removed with the test's temporary directory; set REACTORLAB_SCREENSHOT_DIR to keep a copy)", shot)
	if d := os.Getenv("REACTORLAB_SCREENSHOT_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "htmlreport.png")
		if err := os.WriteFile(p, pg.PNG, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
	for _, p := range pg.Problems {
		t.Error(p)
	}
}

// TestBrowserCatchesBrokenPages shows that openInBrowser sees what
// TestBrowser checks for: a broken image, console errors and warnings, an
// uncaught exception and a request that leaves the file.
func TestBrowserCatchesBrokenPages(t *testing.T) {
	exe := chromium(t)
	broken := []byte(`<!DOCTYPE html><html><head><title>broken</title><link rel="icon" href="data:,"/></head><body>
<img src="data:image/svg+xml;base64,bm90IGFuIFNWRw=="/>
<img src="http://127.0.0.1:9/nothing.png"/>
<script>console.error("boom"); console.warn("careful"); throw new Error("thrown");</script>
</body></html>`)
	pg := openInBrowser(t, exe, broken)
	if len(pg.Images) != 2 {
		t.Fatalf("%d images, want 2", len(pg.Images))
	}
	for i, im := range pg.Images {
		if im.Complete && im.Width > 0 {
			t.Errorf("broken image %d reported as loaded: %+v", i, im)
		}
	}
	all := strings.Join(pg.Problems, "\n")
	for _, want := range []string{"console.error: \"boom\"", "console.warning: \"careful\"", "exception:", "thrown", "request to http://127.0.0.1:9/nothing.png", "loading failed"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q; got:\n%s", want, all)
		}
	}
}

type pageImage struct {
	Plot     string `json:"plot"`
	Complete bool   `json:"complete"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

// openedPage is what openInBrowser saw.
type openedPage struct {
	Title    string
	Text     string // document.body.innerText
	Scripts  int
	Images   []pageImage
	PNG      []byte // full-page screenshot
	Problems []string
}

// openInBrowser writes doc to a file, opens it in a fresh headless
// Chromium (60 s at most) and reports what the page did. Problems are the
// console's errors and warnings, uncaught exceptions, log entries of level
// error or warning, failed loads, and every request for anything but a
// file: or data: URL.
func openInBrowser(t *testing.T, exe string, doc []byte) openedPage {
	t.Helper()
	dir := t.TempDir()
	report := filepath.Join(dir, "report.html")
	if err := os.WriteFile(report, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	pageURL := (&url.URL{Scheme: "file", Path: report}).String()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	newBrowser := func(profile string) (context.Context, context.CancelFunc) {
		actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
			chromedp.ExecPath(exe),
			chromedp.Headless,
			chromedp.NoSandbox, // CI runs as root
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			// The network here is closed: keep Chromium from trying it.
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-extensions", true),
			chromedp.Flag("disable-default-apps", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("hide-scrollbars", true),
			chromedp.UserDataDir(filepath.Join(dir, profile)),
			chromedp.WindowSize(1280, 900),
		)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		return bctx, func() { cancelBrowser(); cancelAlloc() }
	}

	var (
		mu  sync.Mutex
		out openedPage
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		out.Problems = append(out.Problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// Listen starts the browser and the tab; the log and network domains
	// are enabled by chromedp.
	onEvent := func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problem("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			problem("exception: %s", msg)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				problem("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *network.EventLoadingFailed:
			problem("loading failed: %s %s", ev.Type, ev.ErrorText)
		case *network.EventRequestWillBeSent:
			if u := ev.Request.URL; !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
				problem("request to %s", u)
			}
		}
	}
	// Chromium, started while the other core is busy with the rest of
	// `go test ./...`, has crashed at startup once (crashpad: "no stack
	// mapping"); a second start, with a fresh profile, decides. What the
	// page does is checked only once a browser is up.
	var (
		bctx        context.Context
		stopBrowser context.CancelFunc
	)
	for attempt := 1; ; attempt++ {
		bctx, stopBrowser = newBrowser(fmt.Sprintf("profile-%d", attempt))
		defer stopBrowser()
		err := chromedp.Listen(bctx, onEvent)
		if err == nil {
			break
		}
		if attempt == 2 || !strings.Contains(err.Error(), "failed to start") {
			t.Fatalf("start Chromium: %v", err)
		}
		t.Logf("start Chromium, attempt %d: %v; trying again", attempt, err)
		stopBrowser()
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(pageURL)); err != nil {
		t.Fatalf("open %s: %v", pageURL, err)
	}
	// Navigate returns after the load event, which waits for the images;
	// decode() settles any still decoding.
	var err error
	out.Images, err = chromedp.Run(bctx, chromedp.Evaluate[[]pageImage](`(async () => {
		const imgs = Array.from(document.images);
		await Promise.allSettled(imgs.map(i => i.decode()));
		return imgs.map(i => ({plot: i.dataset.plot || "", complete: i.complete, width: i.naturalWidth, height: i.naturalHeight}));
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("read images: %v", err)
	}
	if out.Title, err = chromedp.Run(bctx, chromedp.Title()); err != nil {
		t.Fatal(err)
	}
	if out.Text, err = chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`)); err != nil {
		t.Fatal(err)
	}
	if out.Scripts, err = chromedp.Run(bctx, chromedp.Evaluate[int](`document.scripts.length`)); err != nil {
		t.Fatal(err)
	}
	if out.PNG, err = chromedp.Run(bctx, chromedp.FullScreenshot(100)); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// Stop the browser before reading the problems, so none comes late.
	stopBrowser()
	mu.Lock()
	defer mu.Unlock()
	return out
}
