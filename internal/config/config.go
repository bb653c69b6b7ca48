// Package config reads a program's settings from its environment into the
// config structs of the components it wires, and reports every bad setting
// at once, each naming its variable and what it expects, so that a person
// fixes their environment in one go.
//
// A setting is one field of the component's own config, tagged with its
// variable:
//
//	// MaxTaskBytes bounds one task message. Default 4 MiB.
//	MaxTaskBytes int `env:"PORTALWATCH_MAX_TASK_BYTES"`
//
// and bounded in that config's Validate method with this package's helpers
// (Between, AtLeast, …), whose FieldError names the Go field; Load turns the
// field back into its variable. A program's settings are a struct of its
// components' configs, filled with their defaults before Load reads the
// environment over them, so each program reads only its own variables and a
// default is written once, in its component.
//
// The package imports only the standard library: the components depend on
// it, never the other way round.
package config

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Getenv looks up one environment variable; os.Getenv fits.
type Getenv func(string) string

// Error is a configuration error: one line per bad variable, saying what it
// expects. Programs exit with status 2 on it.
type Error struct{ errs []error }

func (e *Error) Error() string {
	lines := make([]string, len(e.errs))
	for i, err := range e.errs {
		lines[i] = err.Error()
	}
	return "configuration: " + strings.Join(lines, "\n")
}

// Unwrap returns each bad setting's error.
func (e *Error) Unwrap() []error { return e.errs }

// validator is a config that checks its own fields. Validate returns nil or
// errors (joined) that name each bad field, FieldErrors for those a person
// can set.
type validator interface{ Validate() error }

// binding is one tagged field met by Load.
type binding struct {
	path  string // Go field path from the root, "Crawler.Limits.MaxLinks"
	name  string // its variable
	raw   string // the variable's value, "" when unset
	value reflect.Value
	// bad says the value did not parse: the field kept its default, and
	// what Validate says of it is not news.
	bad bool
}

// Load sets the fields of the struct dst points to from getenv: a field
// tagged `env:"NAME"` takes NAME's value when NAME is set and not blank, and
// keeps the value it has (its default) otherwise; untagged struct fields are
// walked in turn. Then Validate is called on every struct walked that has
// it, dst's own included, so a program can check settings of several
// components against each other. The error, an *Error, names every variable
// that does not parse or that Validate refused.
func Load(getenv Getenv, dst any) error {
	root := reflect.ValueOf(dst)
	if root.Kind() != reflect.Pointer || root.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("config.Load: want a pointer to a struct, got %T", dst)
	}
	var (
		errs     []error
		bindings = map[string]binding{}
	)
	walk(root.Elem(), "", func(b binding) {
		b.raw = strings.TrimSpace(getenv(b.name))
		bindings[b.path] = b
		if b.raw == "" {
			return
		}
		if err := parse(b.value, b.raw); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", b.name, redact(b.raw), err))
			b.bad = true
			bindings[b.path] = b
		}
	})
	eachStruct(root.Elem(), "", func(v reflect.Value, path string) {
		check, ok := v.Interface().(validator)
		if !ok {
			return
		}
		for _, err := range leaves(check.Validate()) {
			if err := explain(err, path, bindings); err != nil {
				errs = append(errs, err)
			}
		}
	})
	if len(errs) > 0 {
		return &Error{errs}
	}
	return nil
}

// walk calls found for every tagged field under v, depth first in field
// order.
func walk(v reflect.Value, path string, found func(binding)) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		p := join(path, f.Name)
		if name, ok := f.Tag.Lookup("env"); ok {
			found(binding{path: p, name: name, value: v.Field(i)})
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			walk(v.Field(i), p, found)
		}
	}
}

// eachStruct calls visit for v and every struct field under it.
func eachStruct(v reflect.Value, path string, visit func(reflect.Value, string)) {
	visit(v, path)
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && f.Type.Kind() == reflect.Struct && f.Tag.Get("env") == "" {
			eachStruct(v.Field(i), join(path, f.Name), visit)
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

var durationType = reflect.TypeFor[time.Duration]()

// parse sets v from raw by v's type.
func parse(v reflect.Value, raw string) error {
	switch {
	case v.Type() == durationType:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return errors.New("want a duration such as 30s, 5m or 2h")
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(raw)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return errors.New("want true or false")
		}
		v.SetBool(b)
	case v.CanInt():
		n, err := strconv.ParseInt(raw, 10, v.Type().Bits())
		if err != nil {
			return errors.New("want a whole number")
		}
		v.SetInt(n)
	case v.CanFloat():
		f, err := strconv.ParseFloat(raw, v.Type().Bits())
		if err != nil || f != f {
			return errors.New("want a number")
		}
		v.SetFloat(f)
	default:
		return fmt.Errorf("a setting of type %s cannot be read from the environment", v.Type())
	}
	return nil
}

// leaves flattens err into its FieldErrors and other errors. A wrapper
// around FieldErrors is dropped: Load names their variables itself.
func leaves(err error) []error {
	switch e := err.(type) {
	case nil:
		return nil
	case *FieldError:
		return []error{e}
	case interface{ Unwrap() []error }:
		var out []error
		for _, inner := range e.Unwrap() {
			out = append(out, leaves(inner)...)
		}
		return out
	case interface{ Unwrap() error }:
		inner := leaves(e.Unwrap())
		if slices.ContainsFunc(inner, func(err error) bool { _, ok := err.(*FieldError); return ok }) {
			return inner
		}
	}
	return []error{err}
}

// explain words err, returned by the Validate of the struct at path, with
// the variables of the fields it names; it drops what is said of a
// variable whose value did not parse, which is reported already.
func explain(err error, path string, bindings map[string]binding) error {
	fe, ok := err.(*FieldError)
	if !ok {
		return err
	}
	want := fe.want(func(field string) string {
		if b, ok := bindings[join(path, field)]; ok {
			return b.name
		}
		return field
	})
	b, ok := bindings[join(path, fe.Field)]
	switch {
	case b.bad:
		return nil
	case !ok:
		// A field no variable sets: the program's own mistake.
		return fmt.Errorf("%s is %s: %s", join(path, fe.Field), format(reflect.ValueOf(fe.Value)), want)
	case b.raw == "":
		return fmt.Errorf("%s is unset, and its default %s does not do: %s", b.name, format(b.value), want)
	default:
		// A URL's password never reaches an error.
		return fmt.Errorf("%s=%q: %s", b.name, redact(b.raw), want)
	}
}

// redact hides the password of every URL in raw, a comma-separated list
// of them included (AMQP_URL names a cluster's nodes).
func redact(raw string) string {
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		parts[i] = RedactURL(p)
	}
	return strings.Join(parts, ",")
}

// Var is one variable a program reads.
type Var struct {
	// Name is the variable.
	Name string
	// Default is what the program uses when it is unset, formatted as it
	// would be written ("30s", "4194304", "true"); "" for none.
	Default string
}

// Vars returns the variables the fields of src (a struct or a pointer to
// one) are tagged with, each once, in field order, with src's values as
// their defaults.
func Vars(src any) []Var {
	v := reflect.Indirect(reflect.ValueOf(src))
	var vars []Var
	seen := map[string]bool{}
	walk(v, "", func(b binding) {
		if !seen[b.name] {
			seen[b.name] = true
			vars = append(vars, Var{Name: b.name, Default: format(b.value)})
		}
	})
	return vars
}

// format writes v the way a person would set it.
func format(v reflect.Value) string {
	if !v.IsValid() {
		return "nothing"
	}
	if v.Type() == durationType {
		return FormatDuration(time.Duration(v.Int()))
	}
	switch {
	case v.Kind() == reflect.String:
		return v.String()
	case v.Kind() == reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case v.CanInt():
		return strconv.FormatInt(v.Int(), 10)
	case v.CanFloat():
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}

// FormatDuration writes d without its zero trailing units: 720h, 1m30s,
// 250ms, 0.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Read is how a long-running program takes its settings: it takes no
// arguments, only its environment. -h, --help or help prints the variables
// settings (a pointer to the program's settings, holding their defaults)
// reads to w, and Read returns done; any other argument is an *Error.
// Otherwise Read loads settings from getenv (see Load).
func Read(getenv Getenv, args []string, w io.Writer, program string, settings any) (done bool, err error) {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help", "help":
			fmt.Fprintf(w, "%s takes no arguments: it reads these environment variables (shown with their defaults).\n\n", program)
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, v := range Vars(settings) {
				fmt.Fprintf(tw, "  %s\t%s\n", v.Name, v.Default)
			}
			return true, tw.Flush()
		}
		return false, &Error{[]error{fmt.Errorf("unexpected argument %q: %s reads its settings from the environment (--help lists them)", args[0], program)}}
	}
	return false, Load(getenv, settings)
}
