package report_test

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/browser"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/report/internal/fixture"
)

// screenshot renders rec's HTML report in headless Chromium with the
// network shut off and returns the 1200×1600 screenshot.
func screenshot(t *testing.T, rec *record.Record) image.Image {
	t.Helper()
	return screenshotSized(t, rec, 1600)
}

// screenshotSized is screenshot with a window height px tall.
func screenshotSized(t *testing.T, rec *record.Record, height int) image.Image {
	t.Helper()
	bin := browser.Require(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.HTML(f, rec, report.Options{Now: fixture.Now}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		// Light colours whatever the machine prefers, so the colours are known.
		"--blink-settings=preferredColorScheme=1",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot,
		"--window-size=1200,"+strconv.Itoa(height), "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	fh, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer fh.Close()
	img, err := png.Decode(fh)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	return img
}

// TestHTMLHeatMapInChromium renders a suite's report: its heat map shows
// the full-score green of passed tasks and the red of tasks scored 0.
func TestHTMLHeatMapInChromium(t *testing.T) {
	img := screenshot(t, fixture.Record("suite"))
	var pass, zero int
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := toRGBA(img.At(x, y))
			switch {
			case near(c, color.RGBA{174, 224, 174, 0xff}, 4): // .heat10, hsl(120 45% 78%)
				pass++
			case near(c, color.RGBA{244, 194, 194, 0xff}, 4): // .heat0, hsl(0 70% 86%)
				zero++
			}
		}
	}
	// 19 passed cells and 5 scored 0, each some 100×30 pixels.
	if pass < 19*1000 || zero < 5*1000 || pass < 3*zero {
		t.Errorf("heat map: %d pixels of the passed green, %d of the scored-0 red", pass, zero)
	}
}

// TestHTMLRendersInChromium opens the HTML report in headless Chromium with
// the network shut off and checks the screenshot shows the page: a PNG of
// the window's size, mostly background but with plenty drawn on it, and the
// winner banner's green. Install Chromium to run it (Debian:
// apt-get install -y chromium); it is skipped only when no browser is found.
func TestHTMLRendersInChromium(t *testing.T) {
	img := screenshot(t, fixture.Record("one-trial-winner"))
	b := img.Bounds()
	if b.Dx() != 1200 || b.Dy() != 1600 {
		t.Errorf("screenshot is %v; want 1200×1600", b.Size())
	}
	bg := img.At(2, 2)
	var drawn, green, total int
	colors := map[color.RGBA]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			c := img.At(x, y)
			total++
			if !sameColor(c, bg) {
				drawn++
			}
			rgba := toRGBA(c)
			if len(colors) < 1000 {
				colors[rgba] = true
			}
			// The winner banner and row: --ok-bg #dafbe1.
			if near(rgba, color.RGBA{0xda, 0xfb, 0xe1, 0xff}, 3) {
				green++
			}
		}
	}
	if frac := float64(drawn) / float64(total); frac < 0.10 {
		t.Errorf("only %.1f%% of the screenshot differs from the background: blank page?", frac*100)
	}
	if len(colors) < 50 {
		t.Errorf("screenshot has %d colours; a rendered report has many more", len(colors))
	}
	if green < 2000 {
		t.Errorf("%d pixels of the winner banner's green; the report's CSS did not apply", green)
	}
}

func toRGBA(c color.Color) color.RGBA {
	r, g, b, a := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

func sameColor(a, b color.Color) bool { return toRGBA(a) == toRGBA(b) }

func near(a, b color.RGBA, tol int) bool {
	d := func(x, y uint8) bool { return int(x)-int(y) <= tol && int(y)-int(x) <= tol }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B)
}

// TestHTMLCostChartInChromium renders a suite whose agents report their
// usage: the score-against-cost chart draws its Pareto front (the line
// and its points in --front's violet) for the two priced agents.
func TestHTMLCostChartInChromium(t *testing.T) {
	img := screenshotSized(t, fixture.Record("suite"), 5000)
	violet := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if near(toRGBA(img.At(x, y)), color.RGBA{0x82, 0x50, 0xdf, 0xff}, 6) { // --front #8250df
				violet++
			}
		}
	}
	// Two points of radius 6 (some 150 pixels each at this width) and a
	// dashed line some 700 pixels long, 2 wide, less what antialiasing
	// blends.
	if violet < 300 {
		t.Errorf("%d pixels of the Pareto front's violet; want the chart's front drawn", violet)
	}
	rec := fixture.Record("suite")
	for i := range rec.Standings {
		rec.Standings[i].Cost = nil
	}
	img = screenshotSized(t, rec, 5000)
	violet = 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if near(toRGBA(img.At(x, y)), color.RGBA{0x82, 0x50, 0xdf, 0xff}, 6) {
				violet++
			}
		}
	}
	if violet != 0 {
		t.Errorf("without costs, %d violet pixels: a cost chart was drawn", violet)
	}
}
