package watch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration as people write one: Go's form ("90s",
// "5m", "1h30m") and days, alone or before the rest ("1d", "2d12h"). A
// negative one is an error; its message says what would do.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseUint(s[:i], 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration: write it like 10s, 5m, 1h30m or 1d", s)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write it like 10s, 5m, 1h30m or 1d", s)
	}
	if d < 0 {
		return 0, errors.New("a duration cannot be negative")
	}
	return days + d, nil
}

// FormatDuration writes d as ParseDuration reads it, shortest first: whole
// days as "1d", then hours, minutes and seconds without their zero parts
// ("5m", "1h30m", "1d12h"); under a second as Go writes it.
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Second || d%time.Second != 0 {
		return d.String()
	}
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	return b.String()
}

// Duration is a time.Duration that reads and writes itself in
// ParseDuration's and FormatDuration's form, for command-line flags and
// forms.
type Duration time.Duration

// UnmarshalText reads ParseDuration's form.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// String writes FormatDuration's form.
func (d Duration) String() string { return FormatDuration(time.Duration(d)) }
