package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) Getenv { return func(k string) string { return m[k] } }

// inner and outer stand for a component's config and a program's settings.
type inner struct {
	Size    int           `env:"T_SIZE"`
	Wait    time.Duration `env:"T_WAIT"`
	Share   float64       `env:"T_SHARE"`
	On      bool          `env:"T_ON"`
	Name    string        `env:"T_NAME"`
	URL     string        `env:"T_URL"`
	Nested  struct{ Max int64 }
	Untyped func()
}

func (c inner) Validate() error {
	return errors.Join(
		Between("Size", c.Size, 1, 10),
		AtLeast("Wait", c.Wait, time.Second),
		Between("Share", c.Share, 0, 1),
		Name("Name", c.Name),
		URL("URL", c.URL, "amqp"),
	)
}

type outer struct {
	Inner inner
	Limit int `env:"T_LIMIT"`
	// Again reads a variable Inner reads too: several components may share
	// one setting.
	Again struct {
		Size int `env:"T_SIZE"`
	}
}

func (o outer) Validate() error {
	if o.Limit < o.Inner.Size {
		return Invalid("Limit", o.Limit, "want at least {Inner.Size}")
	}
	return nil
}

func defaultOuter() outer {
	return outer{Inner: inner{Size: 5, Wait: 2 * time.Second, Share: 0.5, Name: "n", URL: "amqp://u:p@h/"}, Limit: 5}
}

func TestLoadKeepsDefaultsAndReadsWhatIsSet(t *testing.T) {
	o := defaultOuter()
	if err := Load(envOf(nil), &o); err != nil {
		t.Fatal(err)
	}
	if o.Inner.Size != 5 || o.Inner.Wait != 2*time.Second || o.Limit != 5 || o.Again.Size != 0 {
		t.Fatalf("an empty environment changed the defaults: %+v", o)
	}
	o = defaultOuter()
	err := Load(envOf(map[string]string{
		"T_SIZE": "7", "T_WAIT": "1m", "T_SHARE": "0", "T_ON": "true", "T_NAME": "  job_queue ", "T_LIMIT": "9",
	}), &o)
	if err != nil {
		t.Fatal(err)
	}
	if o.Inner.Size != 7 || o.Again.Size != 7 || o.Inner.Wait != time.Minute || o.Inner.Share != 0 || !o.Inner.On ||
		o.Inner.Name != "job_queue" || o.Limit != 9 {
		t.Fatalf("read %+v", o)
	}
}

// TestEveryBadVariableIsNamed: parse errors and each Validate's refusals
// come back together, one line each, naming the variable, never a
// password.
func TestEveryBadVariableIsNamed(t *testing.T) {
	o := defaultOuter()
	err := Load(envOf(map[string]string{
		"T_SIZE":  "11",
		"T_WAIT":  "soon",
		"T_SHARE": "1.5",
		"T_ON":    "yes please",
		"T_NAME":  "has space",
		"T_URL":   "http://guest:s3cr3t@host/",
		"T_LIMIT": "x",
	}), &o)
	var cfgErr *Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("Load = %v, want a *config.Error", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`T_SIZE="11": want a whole number from 1 to 10`,
		`T_WAIT="soon": want a duration`,
		`T_SHARE="1.5": want a number from 0 to 1`,
		`T_ON="yes please": want true or false`,
		`T_NAME="has space": use 1 to 200 letters`,
		`T_URL="http://guest:xxxxx@host/": want a URL starting with amqp://`,
		`T_LIMIT="x": want a whole number`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "s3cr3t") {
		t.Errorf("error leaks a password:\n%s", msg)
	}
	if n := strings.Count(msg, "\n") + 1; n != 7 {
		t.Errorf("%d lines for 7 bad variables:\n%s", n, msg)
	}
}

// TestValidateNamesOtherVariables: a rule between settings names both
// variables, and a default that breaks it says it is the default.
func TestValidateNamesOtherVariables(t *testing.T) {
	o := defaultOuter()
	err := Load(envOf(map[string]string{"T_SIZE": "8"}), &o)
	if err == nil || !strings.Contains(err.Error(), "T_LIMIT is unset, and its default 5 does not do: want at least T_SIZE") {
		t.Errorf("error = %v", err)
	}
}

func TestFieldErrorOutsideLoadNamesTheField(t *testing.T) {
	err := inner{Size: 0, Wait: time.Second, Name: "n", URL: "amqp://h/"}.Validate()
	if err == nil || err.Error() != "Size is 0: want a whole number from 1 to 10" {
		t.Errorf("Validate = %v", err)
	}
}

func TestLoadWantsAPointerToAStruct(t *testing.T) {
	if err := Load(envOf(nil), outer{}); err == nil {
		t.Error("Load took a struct by value")
	}
}

func TestVarsListsEachVariableOnceWithItsDefault(t *testing.T) {
	got := Vars(defaultOuter())
	want := []Var{{"T_SIZE", "5"}, {"T_WAIT", "2s"}, {"T_SHARE", "0.5"}, {"T_ON", "false"}, {"T_NAME", "n"},
		{"T_URL", "amqp://u:p@h/"}, {"T_LIMIT", "5"}}
	if len(got) != len(want) {
		t.Fatalf("Vars = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Vars[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", 720 * time.Hour: "720h", 90 * time.Second: "1m30s", time.Minute: "1m", 250 * time.Millisecond: "250ms",
		2*time.Hour + 30*time.Minute: "2h30m", 2*time.Hour + 5*time.Second: "2h0m5s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRead(t *testing.T) {
	var out strings.Builder
	o := defaultOuter()
	done, err := Read(envOf(map[string]string{"T_SIZE": "7"}), []string{"--help"}, &out, "prog", &o)
	if !done || err != nil || !strings.Contains(out.String(), "T_WAIT") || !strings.Contains(out.String(), "2s") || o.Inner.Size != 5 {
		t.Errorf("--help: %v %v %+v\n%s", done, err, o, out.String())
	}
	if done, err := Read(envOf(map[string]string{"T_SIZE": "7", "T_LIMIT": "7"}), nil, &out, "prog", &o); done || err != nil || o.Inner.Size != 7 {
		t.Errorf("no arguments: %v %v %+v", done, err, o)
	}
	var cfgErr *Error
	if _, err := Read(envOf(nil), []string{"--verbose"}, &out, "prog", &o); !errors.As(err, &cfgErr) || !strings.Contains(err.Error(), "--verbose") {
		t.Errorf("an unknown argument: %v", err)
	}
}

func TestURLErrorsNeverShowAPassword(t *testing.T) {
	for _, raw := range []string{
		"postgres://portal:s3cr3t@db.internal:54x2/portalwatch",
		"amqp://guest:s3cr3t@rab bit/%zz",
		"mysql://portal:s3cr3t@db.internal/portalwatch",
	} {
		err := URL("URL", raw, "postgres", "amqp")
		if err == nil || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("URL(%q) = %v: accepted, or the password shows", raw, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"amqp://guest:pw@host:5672/":        "amqp://guest:xxxxx@host:5672/",
		"amqp://guest:pw@host:bad/":         "amqp://guest:xxxxx@host:bad/",
		"redis://:p@ss@host:x/0":            "redis://:xxxxx@host:x/0",
		"postgres://user@host/db":           "postgres://user@host/db",
		"postgres://host/db?sslmode=verify": "postgres://host/db?sslmode=verify",
		"5s":                                "5s",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestHostPort(t *testing.T) {
	for v, ok := range map[string]bool{":8080": true, "127.0.0.1:8080": true, "8080": false, "localhost:http-alt": false, "h:70000": false} {
		if err := HostPort("Addr", v); (err == nil) != ok {
			t.Errorf("HostPort(%q) = %v", v, err)
		}
	}
}
