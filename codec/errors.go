package codec

import "errors"

var errNotImplemented = errors.New("codec: not implemented yet")
