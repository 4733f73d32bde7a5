package codec

import (
	"fmt"
	"reflect"
	"strings"
)

// DecodeHeader fills the struct dst points to from ext, field by field, by each
// field's `ext:"key"` tag; `ext:"key,required"` is Java's @CFNotNull. Values
// follow RemotingCommand.decodeCommandCustomHeader: Integer.parseInt,
// Long.parseLong, Boolean.parseBoolean. An absent optional field keeps what dst
// held (the caller's default); a pointer field stays nil, as Java's null. The
// error is the first absent required or malformed field in field order; the
// other fields are filled all the same. Strings alias the frame.
//
// It serves the admin and POP headers, where reflection costs nothing that
// matters; send and pull have their own allocation-free decoders.
func DecodeHeader(ext ExtFields, dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("codec: DecodeHeader wants a pointer to a struct, got %T", dst)
	}
	v = v.Elem()
	t := v.Type()
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	for i := range t.NumField() {
		tag, ok := t.Field(i).Tag.Lookup("ext")
		if !ok {
			continue
		}
		key, opt, _ := strings.Cut(tag, ",")
		s, present := ext.Get(key)
		if !present {
			if opt == "required" {
				keep(&MissingFieldError{Field: key})
			}
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Pointer {
			nv := reflect.New(fv.Type().Elem())
			if err := setField(nv.Elem(), key, s); err != nil {
				keep(err)
				continue
			}
			fv.Set(nv)
			continue
		}
		if err := setField(fv, key, s); err != nil {
			keep(err)
		}
	}
	return first
}

// setField parses s into f by f's kind; f is left as it was when s is malformed.
func setField(f reflect.Value, key, s string) error {
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Int32:
		n, err := parseInt32Field(key, s)
		if err != nil {
			return err
		}
		f.SetInt(int64(n))
	case reflect.Int64:
		n, err := parseInt64Field(key, s)
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Bool:
		f.SetBool(parseJavaBool(s))
	default:
		return fmt.Errorf("codec: header field %s: unsupported kind %s", key, f.Kind())
	}
	return nil
}
