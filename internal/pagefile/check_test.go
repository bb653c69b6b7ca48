package pagefile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// fillEvery sets every field of the struct v points to, nested structs
// included, to a value of its own, failing for a kind it cannot set: a
// field added to watch.PageSpec is filled (or named) without this test
// being told.
func fillEvery(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Field(i)
		*n++
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprint("s", *n))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int64: // time.Duration
			f.SetInt(int64(*n) * int64(time.Minute))
		case reflect.Slice:
			if f.Type() == reflect.TypeFor[[]watch.Header]() {
				f.Set(reflect.ValueOf([]watch.Header{{Name: fmt.Sprint("X-A", *n), Value: "1"}, {Name: fmt.Sprint("X-B", *n), Value: "2"}}))
				break
			}
			f.Set(reflect.ValueOf([]string{fmt.Sprint("a", *n), fmt.Sprint("b", *n)}))
		case reflect.Struct:
			fillEvery(t, f, n)
		default:
			t.Fatalf("%s.%s: a %s, which the test cannot fill: teach it, and pack", v.Type(), v.Type().Field(i).Name, f.Kind())
		}
	}
}

// TestPackKeepsEveryField: a packed page unpacks to the page, every field
// of watch.PageSpec set, and an empty list comes back nil.
func TestPackKeepsEveryField(t *testing.T) {
	var s watch.PageSpec
	n := 0
	fillEvery(t, reflect.ValueOf(&s).Elem(), &n)
	p := pack(7, s)
	if got := p.unpack(); !reflect.DeepEqual(got, s) || p.line != 7 || p.url() != s.URL {
		t.Errorf("packed and unpacked:\n%+v\nwant\n%+v", got, s)
	}
	empty := watch.PageSpec{URL: "http://127.0.0.1:9/a", Tags: []string{}, Interval: time.Minute}
	if got := pack(1, empty).unpack(); got.Tags != nil || got.URL != empty.URL || got.Interval != time.Minute || got.Paused {
		t.Errorf("an empty list: %+v", got)
	}
}

// TestReadCheckedAgreesWithCheck: ReadChecked finds the pages and the bad
// rows Check finds (a bad row, a refused one, a URL given twice), names the
// rows RefuseWatched refuses among them, and yields the good pages as Check
// returns them.
func TestReadCheckedAgreesWithCheck(t *testing.T) {
	list := "url,tags,interval,ignore,within\n" +
		"http://127.0.0.1:9/a,x Y,1m,\"a\nb\",main\n" +
		"http://127.0.0.1:9/b,,soon,,\n" +
		"ftp://127.0.0.1/c,,,,\n" +
		"HTTP://127.0.0.1:9/a,,,,\n" +
		"http://127.0.0.1:9/e,,,,\n" +
		"http://127.0.0.1:9/f,z,,,\n"
	pol := registration.Policy{GuardURL: fetch.Guard(true, nil)}
	ctx := context.Background()
	rows, err := Read(strings.NewReader(list), CSV)
	if err != nil {
		t.Fatal(err)
	}
	watched := func(u string) bool { return u == "http://127.0.0.1:9/e" }
	_, checkErr := Check(ctx, pol, rows, watched)
	// Row 2 spans two lines: the bad rows are 4, 5 and 6.
	goodRows := slices.DeleteFunc(slices.Clone(rows), func(r Row) bool { return slices.Contains([]int{4, 5, 6}, r.Line) })
	want, err := Check(ctx, pol, goodRows, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}

	l, err := ReadChecked(ctx, pol, strings.NewReader(list), CSV)
	if err != nil {
		t.Fatal(err)
	}
	l.RefuseWatched([]string{"http://127.0.0.1:9/e"})
	if err := l.Err(); err == nil || err.Error() != checkErr.Error() {
		t.Errorf("ReadChecked's bad rows:\n%v\nCheck's:\n%v", err, checkErr)
	}
	if urls := l.URLs(); fmt.Sprint(urls) != "[http://127.0.0.1:9/a http://127.0.0.1:9/e http://127.0.0.1:9/f]" {
		t.Errorf("URLs %v", urls)
	}
	var got []watch.PageSpec
	for p := range l.Pages() {
		got = append(got, p)
	}
	// %+v shows an empty list as a nil one, as the store takes them.
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("ReadChecked's pages:\n%+v\nCheck's:\n%+v", got, want)
	}
	if l.Len() != 3 {
		t.Errorf("Len %d, want 3 (RefuseWatched names a row bad; the import is refused whole)", l.Len())
	}

	// A list it cannot read is an *UnreadableError, as Read's.
	var unreadable *UnreadableError
	if _, err := ReadChecked(ctx, pol, strings.NewReader("name\nx\n"), CSV); !errors.As(err, &unreadable) {
		t.Errorf("a list without a url column: %v, want *UnreadableError", err)
	}
}

// TestReadCheckedCapsTheTextItHolds: pages whose URLs grow threefold once
// percent-encoded are refused once their text passes MaxCheckedBytes,
// naming the row, though the file is within MaxBytes.
func TestReadCheckedCapsTheTextItHolds(t *testing.T) {
	path := strings.Repeat("é", 330) // 660 bytes here, 1980 once normalised
	var b strings.Builder
	b.WriteString("url\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "http://127.0.0.1:9/%d/%s\n", i, path)
	}
	pol := registration.Policy{GuardURL: fetch.Guard(true, nil)}
	_, err := ReadChecked(context.Background(), pol, strings.NewReader(b.String()), CSV)
	var unreadable *UnreadableError
	if !errors.As(err, &unreadable) || !regexp.MustCompile(`^row 4\d\d\d: the pages up to here take more than 8388608 bytes once checked`).MatchString(err.Error()) {
		t.Errorf("%d bytes of long URLs: %v, want refused at a row past 4000", b.Len(), err)
	}
}

// TestBadRowMessagesAreShort: a bad row's message keeps its head and its
// reason, whatever the length of the value it quotes; an answer may name
// the first rows and count the rest.
func TestBadRowMessagesAreShort(t *testing.T) {
	long := "ftp://127.0.0.1/" + strings.Repeat("a", 5000)
	rows := []Row{{Line: 2, Page: watch.PageSpec{URL: long}}, {Line: 3, Err: errors.New("no url")}, {Line: 4, Err: errors.New("no url")}}
	_, err := Check(context.Background(), registration.Policy{GuardURL: fetch.Guard(true, nil)}, rows, func(string) bool { return false })
	var bad *BadRowsError
	if !errors.As(err, &bad) || len(bad.Rows) != 3 {
		t.Fatalf("%v", err)
	}
	msg := bad.Rows[0].Err.Error()
	if len(msg) > maxErrorBytes+len("…") || !strings.HasPrefix(msg, "ftp://127.0.0.1/aaa") || !strings.Contains(msg, `scheme "ftp"`) {
		t.Errorf("the message of a 5 KB bad URL: %d bytes, %q", len(msg), msg)
	}
	if s := bad.Summary(1); !strings.HasPrefix(s, "3 bad rows, nothing imported\nrow 2: ftp") || !strings.HasSuffix(s, "\n… and 2 more") {
		t.Errorf("Summary(1): %q", s)
	}
	if bad.Summary(3) != bad.Error() || strings.Contains(bad.Error(), "more") {
		t.Errorf("Summary(3) %q, Error %q", bad.Summary(3), bad.Error())
	}
}
