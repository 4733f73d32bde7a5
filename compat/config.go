package compat

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The one configuration binder: a struct field tagged `prop:"key"` takes the
// broker.conf / namesrv.conf value of that key, as Java's
// MixAll.properties2Object sets a config object from Properties. More names,
// comma-separated, are aliases (the first is the one printed); `omitempty`
// leaves an empty string out of what is printed, `secret` leaves the value out
// always (credentials). A field tagged
// `prop:",inline"` is a struct whose own fields are bound in turn.
//
// Value rules, Java's where they are sound:
//   - strings are trimmed (Java trims them too);
//   - booleans are Boolean.parseBoolean of the trimmed value: "true" in any case
//     is true, anything else false (Java does not trim, so "true " is false there);
//   - numbers must parse whole; Java swallows the NumberFormatException and keeps
//     the default, which hides typos, so a malformed number is an error here.

// configField is one bound field: where it is and how it reads and writes.
type configField struct {
	key       string   // the name printed
	aliases   []string // other names bound
	omitEmpty bool
	secret    bool
	v         reflect.Value
}

// configFields lists the tagged fields of the structs dsts point to. A key bound
// twice is a programming error: every key is typed once.
func configFields(dsts ...any) ([]configField, error) {
	var out []configField
	seen := map[string]bool{}
	var walk func(v reflect.Value) error
	walk = func(v reflect.Value) error {
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			tag, ok := t.Field(i).Tag.Lookup("prop")
			if !ok || tag == "-" {
				continue
			}
			f := v.Field(i)
			var names []string
			inline, omitEmpty, secret := false, false, false
			for _, part := range strings.Split(tag, ",") {
				switch part {
				case "":
				case "inline":
					inline = true
				case "omitempty":
					omitEmpty = true
				case "secret":
					secret = true
				default:
					names = append(names, part)
				}
			}
			if inline {
				if f.Kind() != reflect.Struct || len(names) > 0 {
					return fmt.Errorf("config field %s: inline needs an unnamed struct", t.Field(i).Name)
				}
				if err := walk(f); err != nil {
					return err
				}
				continue
			}
			if len(names) == 0 {
				return fmt.Errorf("config field %s: no key", t.Field(i).Name)
			}
			for _, n := range names {
				if seen[n] {
					return fmt.Errorf("config key %q is bound twice", n)
				}
				seen[n] = true
			}
			switch f.Kind() {
			case reflect.String, reflect.Bool, reflect.Int, reflect.Int32, reflect.Int64, reflect.Float64:
			default:
				return fmt.Errorf("config key %q: unsupported field kind %s", names[0], f.Kind())
			}
			out = append(out, configField{key: names[0], aliases: names[1:], omitEmpty: omitEmpty, secret: secret, v: f})
		}
		return nil
	}
	for _, d := range dsts {
		v := reflect.ValueOf(d)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("config binder: %T is not a pointer to a struct", d)
		}
		if err := walk(v.Elem()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func setConfigValue(f reflect.Value, raw string) error {
	raw = strings.TrimSpace(raw)
	switch f.Kind() {
	case reflect.String:
		f.SetString(raw)
	case reflect.Bool:
		f.SetBool(strings.EqualFold(raw, "true"))
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return err
		}
		f.SetFloat(x)
	}
	return nil
}

// BindConfig sets the fields of dsts (pointers to tagged structs) from props and
// returns, sorted, the keys of props that none of them binds. Every known key is
// applied; the values that do not parse are reported together, each naming its key.
func BindConfig(props map[string]string, dsts ...any) (unknown []string, err error) {
	fields, err := configFields(dsts...)
	if err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(fields))
	var errs []error
	for _, f := range fields {
		// The canonical name wins over an alias, as it is the one printed.
		for _, name := range append([]string{f.key}, f.aliases...) {
			known[name] = true
		}
		for _, name := range append(slices.Clone(f.aliases), f.key) {
			raw, ok := props[name]
			if !ok {
				continue
			}
			if err := setConfigValue(f.v, raw); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, raw, err))
			}
		}
	}
	for k := range props {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return unknown, errors.Join(errs...)
}

// ConfigPropertiesWith is ConfigProperties of src plus extra's keys where no
// field has them (values a config lists but other parts own, as the network
// layer's).
func ConfigPropertiesWith(src any, extra map[string]string) map[string]string {
	m := ConfigProperties(src)
	for k, v := range extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return m
}

// ConfigProperties returns every bound key of srcs (pointers to tagged structs)
// with its value as Java prints it (GET_BROKER_CONFIG, rmqd -p, persisted files).
func ConfigProperties(srcs ...any) map[string]string {
	fields, err := configFields(srcs...)
	if err != nil {
		return nil
	}
	m := make(map[string]string, len(fields))
	for _, f := range fields {
		if f.secret {
			continue
		}
		switch f.v.Kind() {
		case reflect.String:
			if f.omitEmpty && f.v.String() == "" {
				continue
			}
			m[f.key] = f.v.String()
		case reflect.Bool:
			m[f.key] = strconv.FormatBool(f.v.Bool())
		case reflect.Int, reflect.Int32, reflect.Int64:
			m[f.key] = strconv.FormatInt(f.v.Int(), 10)
		case reflect.Float64:
			m[f.key] = strconv.FormatFloat(f.v.Float(), 'f', -1, 64)
		}
	}
	return m
}

// ConfigKeys returns the bound keys of srcs, sorted, or an error when a key is
// bound twice (tests call it over every config struct of a process).
func ConfigKeys(srcs ...any) ([]string, error) {
	fields, err := configFields(srcs...)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, f := range fields {
		keys = append(keys, f.key)
		keys = append(keys, f.aliases...)
	}
	slices.Sort(keys)
	return keys, nil
}
