package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/pagefile"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// importGrowthBound is what one import may add to the web program's peak
// resident set (issue 26): an import is at most pagefile.MaxBytes, and the
// program must hold a bounded part of it, never a tree or a list of every
// outline it holds.
const importGrowthBound = 50 << 20

// killAbove is where the test stops an import that has already failed the
// bound, so that a regression costs the shared machine a little memory, not
// gigabytes (today's code reached several on the worst files).
const killAbove = 1 << 30

// worstImport is one import file built to cost the reader as much memory as
// a file within pagefile.MaxBytes can, and what the program must answer.
type worstImport struct {
	name, format string
	body         func() []byte
	status       int    // the answer's status
	want         string // a phrase of the answer
}

// fill writes row(i) for i = 0, 1, ... into b, stopping before b would pass
// room bytes (room < pagefile.MaxBytes leaves space for a tail), and
// returns the rows written.
func fill(b *bytes.Buffer, room int, row func(i int) string) int {
	for i := 0; ; i++ {
		r := row(i)
		if b.Len()+len(r) > room {
			return i
		}
		b.WriteString(r)
	}
}

// rowsUpTo writes rows 0..n-1, or as many as fit in room.
func rowsUpTo(b *bytes.Buffer, room, n int, row func(i int) string) {
	fill(b, room, func(i int) string {
		if i >= n {
			return strings.Repeat("x", room+1) // never fits: stop
		}
		return row(i)
	})
}

// letters returns n distinct short words sep-separated: the cheapest way in
// bytes to make many list items or tags.
func letters(n int, sep string) string {
	words := make([]string, n)
	for i := range words {
		words[i] = strconv.FormatInt(int64(i), 36)
	}
	return strings.Join(words, sep)
}

const room = pagefile.MaxBytes - 64 // each file's tail fits in 64 bytes

// validLists is one row's worth of the most list items and tags the domain
// admits, in the fewest bytes: 20 tags, 20 one-letter patterns in each of
// the five pattern lists (5 × 20 × 3 instructions, within the 1000 of a
// page) and 10 one-letter region selectors.
var (
	validTags      = letters(20, " ")
	validPatterns  = strings.Join(strings.Split("abcdefghijklmnopqrst", ""), "\n")
	validSelectors = "a\nb\ni\np\nq"
)

func worstImports() []worstImport {
	csvFile := func(header string, rows func(b *bytes.Buffer)) func() []byte {
		return func() []byte {
			var b bytes.Buffer
			b.WriteString(header + "\n")
			rows(&b)
			return b.Bytes()
		}
	}
	opmlFile := func(outlines func(b *bytes.Buffer), tail string) func() []byte {
		return func() []byte {
			var b bytes.Buffer
			b.WriteString(`<?xml version="1.0"?><opml version="2.0"><body>`)
			outlines(&b)
			b.WriteString(tail + `</body></opml>`)
			return b.Bytes()
		}
	}
	csvQuote := func(s string) string { return `"` + s + `"` }
	xmlLines := func(s string) string { return strings.ReplaceAll(s, "\n", "&#xA;") }
	return []worstImport{
		// CSV: the most rows (two bytes each), one 8 MiB cell, one row
		// of 8 M columns, rows of hundreds of tags or list items, the
		// most rows with a long bad cell or URL each (the answer names
		// them all), a plain list of 10,000 URLs, URLs that triple once
		// percent-encoded (past the cap on checked text, and up to it),
		// and the largest list that imports (every page at the domain's
		// caps on tags and lists).
		{"csv_many_rows", "csv", csvFile("url", func(b *bytes.Buffer) {
			fill(b, room, func(int) string { return "a\n" })
		}), 400, "more than 10000 pages"},
		{"csv_huge_cell", "csv", csvFile("url,ignore", func(b *bytes.Buffer) {
			b.WriteString(`http://127.0.0.1:9/a,"`)
			fill(b, room, func(int) string { return "a\n" })
			b.WriteString("\"\n")
		}), 400, "row 2"},
		{"csv_many_columns", "csv", csvFile("url", func(b *bytes.Buffer) {
			b.WriteString("http://127.0.0.1:9/a")
			fill(b, room, func(int) string { return "," })
			b.WriteString("\n")
		}), 400, "row 2"},
		{"csv_many_tags", "csv", csvFile("url,tags", func(b *bytes.Buffer) {
			tags := letters(200, " ")
			rowsUpTo(b, room, pagefile.MaxRows, func(i int) string { return fmt.Sprintf("http://127.0.0.1:9/%d,%s\n", i, tags) })
		}), 422, "row 2: "},
		{"csv_many_list_items", "csv", csvFile("url,ignore", func(b *bytes.Buffer) {
			items := csvQuote(letters(250, "\n"))
			rowsUpTo(b, room, pagefile.MaxRows, func(i int) string { return fmt.Sprintf("http://127.0.0.1:9/%d,%s\n", i, items) })
		}), 422, "row 2: "},
		{"csv_bad_cells", "csv", csvFile("url,interval", func(b *bytes.Buffer) {
			bad := strings.Repeat("x", 800)
			rowsUpTo(b, room, pagefile.MaxRows, func(i int) string { return fmt.Sprintf("http://127.0.0.1:9/%d,%s\n", i, bad) })
		}), 422, "row 2: interval"},
		{"csv_plain_import", "csv", csvFile("url", func(b *bytes.Buffer) {
			rowsUpTo(b, room, pagefile.MaxRows, func(i int) string { return fmt.Sprintf("http://127.0.0.1:9/plain%d\n", i) })
		}), 201, `"pages":[`},
		{"csv_long_urls", "csv", csvFile("url", func(b *bytes.Buffer) {
			// Each "é" is 2 bytes here and 6 ("%C3%A9") once normalised:
			// the pages would hold three times what the file does.
			path := strings.Repeat("é", 330)
			rowsUpTo(b, room, pagefile.MaxRows, func(i int) string { return fmt.Sprintf("http://127.0.0.1:9/%d/%s\n", i, path) })
		}), 400, "once checked"},
		{"csv_long_urls_at_cap", "csv", csvFile("url", func(b *bytes.Buffer) {
			path := strings.Repeat("é", 330)
			// As many as the cap on the text of checked pages (8 MiB) holds.
			rowsUpTo(b, room, pagefile.MaxBytes/2048, func(i int) string {
				return fmt.Sprintf("http://127.0.0.1:9/cap%d/%s\n", i, path)
			})
		}), 201, `"pages":[`},
		{"csv_long_bad_urls", "csv", csvFile("url", func(b *bytes.Buffer) {
			// Each row's error quotes its URL: the answer names 10,000
			// rows with messages cut at their longest.
			path := strings.Repeat("a", 780)
			rowsUpTo(b, room, pagefile.MaxRows, func(i int) string { return fmt.Sprintf("ftp://127.0.0.1/%d/%s\n", i, path) })
		}), 422, "row 2: "},
		{"csv_largest_import", "csv", csvFile("url,name,tags,ignore,within,exclude,include_text,exclude_text,include_url,exclude_url",
			func(b *bytes.Buffer) {
				rest := strings.Join([]string{validTags, csvQuote(validPatterns), csvQuote(validSelectors), csvQuote(validSelectors),
					csvQuote(validPatterns), csvQuote(validPatterns), csvQuote(validPatterns), csvQuote(validPatterns)}, ",")
				rowsUpTo(b, room, pagefile.MaxRows, func(i int) string {
					return fmt.Sprintf("http://127.0.0.1:9/csv%d,Page %d,%s\n", i, i, rest)
				})
			}), 201, `"pages":[`},

		// OPML: the most outlines (as pages and as empty folders), the
		// brief's 2,000 folders around the most pages, 9,990 levels (once
		// accepted) and the deepest nesting 8 MiB holds, one 8 MiB
		// attribute, one outline of 1.6 M attributes, an 8 MiB comment,
		// outlines of hundreds of categories, the most bad outlines, and the
		// largest list that imports.
		{"opml_many_pages", "opml", opmlFile(func(b *bytes.Buffer) {
			fill(b, room, func(int) string { return `<outline url="a"/>` })
		}, ""), 400, "more than 10000 pages"},
		{"opml_empty_folders", "opml", opmlFile(func(b *bytes.Buffer) {
			fill(b, room, func(int) string { return `<outline/>` })
		}, ""), 400, "no page"},
		{"opml_nested_folders", "opml", opmlFile(func(b *bytes.Buffer) {
			for i := range 2000 {
				fmt.Fprintf(b, `<outline text="f%d">`, i)
			}
			fill(b, room-2000*len(`</outline>`), func(i int) string { return fmt.Sprintf(`<outline url="http://127.0.0.1:9/%d"/>`, i) })
			b.WriteString(strings.Repeat(`</outline>`, 2000))
		}, ""), 400, "deeper than 32"},
		{"opml_9990_levels", "opml", opmlFile(func(b *bytes.Buffer) {
			b.WriteString(strings.Repeat(`<outline text="f">`, 9990))
			b.WriteString(`<outline url="http://127.0.0.1:9/deep"/>`)
			b.WriteString(strings.Repeat(`</outline>`, 9990))
		}, ""), 400, "deeper than 32"},
		{"opml_deepest", "opml", opmlFile(func(b *bytes.Buffer) {
			fill(b, room, func(int) string { return `<outline>` })
		}, ""), 400, "deeper than 32"},
		{"opml_huge_attribute", "opml", opmlFile(func(b *bytes.Buffer) {
			b.WriteString(`<outline url="http://127.0.0.1:9/a" pwIgnore="`)
			fill(b, room, func(int) string { return "a\n" })
			b.WriteString(`"/>`)
		}, ""), 400, "a tag, text or comment is longer than"},
		{"opml_many_attributes", "opml", opmlFile(func(b *bytes.Buffer) {
			b.WriteString(`<outline url="http://127.0.0.1:9/a"`)
			fill(b, room, func(int) string { return ` a=""` })
			b.WriteString(`/>`)
		}, ""), 400, "a tag, text or comment is longer than"},
		{"opml_huge_comment", "opml", opmlFile(func(b *bytes.Buffer) {
			b.WriteString(`<outline url="http://127.0.0.1:9/a"/><!--`)
			fill(b, room, func(int) string { return "a" })
			b.WriteString(`-->`)
		}, ""), 400, "longer than"},
		{"opml_many_categories", "opml", opmlFile(func(b *bytes.Buffer) {
			cats := letters(200, ",")
			rowsUpTo(b, room, pagefile.MaxRows, func(i int) string {
				return fmt.Sprintf(`<outline url="http://127.0.0.1:9/%d" category="%s"/>`, i, cats)
			})
		}, ""), 422, "row 1: "},
		{"opml_bad_attributes", "opml", opmlFile(func(b *bytes.Buffer) {
			bad := strings.Repeat("x", 780)
			rowsUpTo(b, room, pagefile.MaxRows, func(i int) string {
				return fmt.Sprintf(`<outline url="http://127.0.0.1:9/%d" pwInterval="%s"/>`, i, bad)
			})
		}, ""), 422, "row 1: interval"},
		{"opml_largest_import", "opml", opmlFile(func(b *bytes.Buffer) {
			p, s := xmlLines(validPatterns), xmlLines(validSelectors)
			cats := "/" + strings.ReplaceAll(validTags, " ", ",/")
			rowsUpTo(b, room, pagefile.MaxRows, func(i int) string {
				return fmt.Sprintf(`<outline text="Page %d" url="http://127.0.0.1:9/opml%d" category="%s" pwIgnore="%s" pwWithin="%s" pwExclude="%s" `+
					`pwIncludeText="%s" pwExcludeText="%s" pwIncludeUrl="%s" pwExcludeUrl="%s"/>`, i, i, cats, p, s, s, p, p, p, p)
			})
		}, ""), 201, `"pages":[`},
	}
}

// TestImportPeakMemoryIsBounded runs the real web program (built without
// the race detector, as it is deployed) and sends it each worst import in
// a process of its own: the program's peak resident set (VmHWM) may grow by
// less than importGrowthBound from where it stood, serving, before the
// import. It logs each file's growth, the figures of issue 26.
func TestImportPeakMemoryIsBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the peak resident set from /proc")
	}
	bin := buildWeb(t)
	st, pool := systest.Store(t)
	const token = "pw_import_memory"
	if _, err := st.CreateToken(context.Background(), "importer", token, true); err != nil {
		t.Fatal(err)
	}
	jobs := "webtest_" + testsvc.ID(t)
	for _, c := range worstImports() {
		t.Run(c.name, func(t *testing.T) {
			body := c.body()
			if len(body) > pagefile.MaxBytes {
				t.Fatalf("the file is %d bytes, over the cap of %d", len(body), pagefile.MaxBytes)
			}
			addr := freeAddr(t)
			p, err := systest.StartProcess(bin, "web", []string{
				"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
				"DATABASE_URL=" + pool.Config().ConnString(), "AMQP_URL=" + testsvc.AMQPURL(),
				"PORTALWATCH_JOB_QUEUE=" + jobs, "PORTALWATCH_TASK_QUEUE=" + jobs + "_tasks",
				"PORTALWATCH_ALLOW_PRIVATE=true", "PORTALWATCH_WEB_ADDR=" + addr, "PORTALWATCH_DATA_DIR=" + t.TempDir(),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if code, killed := p.Stop(10 * time.Second); (code != 0 || killed) && !t.Failed() {
					t.Errorf("web stopped with %d (killed %t):\n%s", code, killed, p.Output())
				}
			}()
			base := "http://" + addr
			testsvc.Eventually(t, 30*time.Second, "the web program's /healthz", func() (bool, error) {
				if p.Exited() {
					return false, fmt.Errorf("web exited:\n%s", p.Output())
				}
				resp, err := http.Get(base + "/healthz")
				if err != nil {
					return false, nil
				}
				resp.Body.Close()
				return resp.StatusCode == 200, nil
			})
			before := procStatusBytes(t, p.Pid(), "VmHWM")

			// A watchdog ends an import past killAbove: the bound has
			// failed by then, and the figure is all the test needs.
			var killed atomic.Bool
			stop := make(chan struct{})
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-p.Done():
						return
					case <-tick.C:
					}
					if rss, err := readProcStatus(p.Pid(), "VmRSS"); err == nil && rss > killAbove {
						killed.Store(true)
						p.Kill()
						return
					}
				}
			}()
			start := time.Now()
			req, err := http.NewRequest("POST", base+"/api/v1/pages/import?format="+c.format, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			var answer []byte
			if err == nil {
				answer, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			elapsed := time.Since(start)
			var after int64
			if !killed.Load() {
				after = procStatusBytes(t, p.Pid(), "VmHWM")
			}
			close(stop)
			<-watched
			if killed.Load() {
				t.Fatalf("%s (%d bytes): the program passed %d MiB of RSS and was killed after %v (it held %.1f MiB before)",
					c.name, len(body), killAbove>>20, elapsed.Round(time.Millisecond), mib(before))
			}
			growth := after - before
			t.Logf("%s (%.1f MiB): peak RSS %.1f -> %.1f MiB, +%.1f MiB in %v", c.name, mib(int64(len(body))),
				mib(before), mib(after), mib(growth), elapsed.Round(time.Millisecond))
			if growth >= importGrowthBound {
				t.Errorf("%s: the import grew the peak RSS by %.1f MiB; the bound is %d MiB", c.name, mib(growth), importGrowthBound>>20)
			}
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			if resp.StatusCode != c.status || !bytes.Contains(answer, []byte(c.want)) {
				t.Errorf("%s: %d %.600s; want %d with %q", c.name, resp.StatusCode, answer, c.status, c.want)
			}
		})
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// buildWeb builds the web program without the race detector, which
// multiplies the memory it would measure.
func buildWeb(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "web")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/web")
	cmd.Dir = systest.ModuleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/web: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// procStatusBytes reads a "kB" field of /proc/<pid>/status, in bytes.
func procStatusBytes(t *testing.T, pid int, field string) int64 {
	t.Helper()
	n, err := readProcStatus(pid, field)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func readProcStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status %s: %w", pid, field, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}
