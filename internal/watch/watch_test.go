package watch_test

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// corpusTasks builds a task from each real page of the corpus, links as the
// crawler finds them in the raw bytes: legacy-charset pages give strings
// that are not valid UTF-8, which the codec must handle as encoding/json does.
func corpusTasks(t *testing.T) []watch.Task {
	t.Helper()
	base, _ := url.Parse("https://portal.example/")
	at := time.Date(2026, 11, 30, 6, 0, 0, 123456789, time.UTC)
	var tasks []watch.Task
	for i, p := range corpus.Pages(t) {
		links, _ := domwalk.ParseBytes(p.Body, base, domwalk.Limits{})
		tasks = append(tasks, watch.Task{BaseURL: base.String(), ID: int64(i + 1), Context: links, Status: 200,
			FinalURL: base.String() + "<&>", FetchedAt: at, ETag: `W/"x"`, LastModified: "Mon, 30 Nov 2026 05:00:00 GMT"})
	}
	tasks = append(tasks, watch.Task{BaseURL: "https://down.example/", ID: 7, Error: "dial tcp: connection refused"},
		watch.Task{BaseURL: "https://same.example/", ID: 8, Status: 200, Unchanged: true, FetchedAt: at},
		watch.Task{BaseURL: "https://odd.example/?a=1&b=<2>", ID: 9, Status: 200, Truncated: 3, Context: []watch.Link{
			{URL: "https://odd.example/&&&", Text: "<b> & \u2028\u2029 \x00\x1f \"q\" \\ caf\xe9"}}})
	return tasks
}

// stdMarshal is encoding/json's encoding of v without HTML escaping, which
// is how messages are written.
func stdMarshal(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := stdjson.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// The messages' codec writes what encoding/json writes (without HTML
// escaping) and reads what it reads, so any other program that speaks
// encoding/json's JSON reads ours.
func TestCodecAgreesWithEncodingJSON(t *testing.T) {
	for _, task := range corpusTasks(t) {
		ours, err := watch.EncodeTask(task)
		if err != nil {
			t.Fatalf("EncodeTask(page %d): %v", task.ID, err)
		}
		std := stdMarshal(t, task)
		if string(ours) != string(std) {
			t.Errorf("task of page %d: EncodeTask and encoding/json differ:\n%.300s\n%.300s", task.ID, ours, std)
			continue
		}
		got, err := watch.DecodeTask(std)
		if err != nil {
			t.Fatalf("DecodeTask(page %d): %v", task.ID, err)
		}
		var want watch.Task
		if err := stdjson.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("task of page %d: DecodeTask and encoding/json read different tasks", task.ID)
		}
	}

	job := watch.Job{BaseURL: "https://portal.example/", ID: 3, ETag: `"e"`, ScheduledAt: time.Now().UTC(),
		Options: &watch.LinkOptions{SameSiteOnly: true, Ignore: []string{`\?sid=`}}, LinksDigest: "abc"}
	ours, _ := watch.EncodeJob(job)
	std := stdMarshal(t, job)
	if string(ours) != string(std) {
		t.Errorf("EncodeJob = %s, encoding/json = %s", ours, std)
	}
	got, err := watch.DecodeJob(std)
	if err != nil || !reflect.DeepEqual(got, job) {
		t.Errorf("DecodeJob = %+v, %v; want %+v", got, err, job)
	}
}

func TestDecodeRejectsWhatEncodingJSONRejects(t *testing.T) {
	for _, body := range []string{
		``, `null`, `[]`, `{"id":1,"baseUrl":"https://x.example/"`,
		`{"id":"1","baseUrl":"https://x.example/"}`,
		`{"id":1,"baseUrl":"https://x.example/","context":[{"url":1}]}`,
		`{"id":1,"baseUrl":"https://x.example/","context":{}}`,
		`{"id":1,"baseUrl":"https://x.example/","fetchedAt":"yesterday"}`,
		`{"id":1,"baseUrl":"https://x.example/"} trailing`,
		`{"id":0,"baseUrl":"https://x.example/"}`, `{"id":1,"baseUrl":"  "}`,
	} {
		var std watch.Task
		stdErr := stdjson.Unmarshal([]byte(body), &std)
		if stdErr == nil && (std.ID <= 0 || strings.TrimSpace(std.BaseURL) == "") {
			stdErr = watch.ErrMalformed
		}
		_, err := watch.DecodeTask([]byte(body))
		if (err == nil) != (stdErr == nil) {
			t.Errorf("DecodeTask(%q) = %v, encoding/json says %v", body, err, stdErr)
		}
		if err != nil && !errors.Is(err, watch.ErrMalformed) {
			t.Errorf("DecodeTask(%q) = %v, want an error wrapping ErrMalformed (it goes to the dead-letter queue)", body, err)
		}
	}
}

// Bytes that are not UTF-8 inside a string, as a foreign producer may send:
// both read them as U+FFFD.
func TestDecodeReadsInvalidUTF8AsEncodingJSONDoes(t *testing.T) {
	body := []byte("{\"id\":1,\"baseUrl\":\"https://x.example/\",\"context\":[{\"url\":\"https://x.example/\xff\xfe\",\"text\":\"caf\xe9\"}]}")
	got, err := watch.DecodeTask(body)
	if err != nil {
		t.Fatal(err)
	}
	var want watch.Task
	if err := stdjson.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeTask = %+v, encoding/json = %+v", got.Context, want.Context)
	}
}

// HTML escaping made "&" and "<" cost six bytes each; messages are not
// escaped, and the codec still reads them.
func TestEncodeDoesNotEscapeHTML(t *testing.T) {
	task := watch.Task{BaseURL: "https://x.example/", ID: 1, Context: []watch.Link{{URL: "https://x.example/?a&b", Text: "<&>"}}}
	body, err := watch.EncodeTask(task)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte(`"url":"https://x.example/?a&b","text":"<&>"`)) {
		t.Fatalf("EncodeTask = %s, want & < > written as themselves", body)
	}
	got, err := watch.DecodeTask(body)
	if err != nil || !reflect.DeepEqual(got, task) {
		t.Fatalf("DecodeTask = %+v, %v; want %+v", got, err, task)
	}
}
