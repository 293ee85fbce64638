// Package eventstream is the Go side of the contract between services that
// talk through Redis Streams: which stream a message type is published to,
// and how one stream entry holds one message.
//
// The contract is declared once, in the .proto files, by the
// (fourkingdoms.events.v1.stream) message option (see
// proto/fourkingdoms/events/v1/stream.proto); this package reads it from the
// compiled-in message descriptor. Producers build entries with Fields and
// consumers parse them with Decode, so neither repeats the stream's key, the
// entry's field names or the type string. An entry has two fields: the
// message's full protobuf name and the message in binary encoding.
//
// Reader is the one consumer-group loop every service uses to consume a
// stream: at-least-once delivery to an idempotent handler, acknowledgement
// after the handler's work, takeover of a dead consumer's entries, a
// dead-letter stream, removal of departed consumers, metrics and backoff
// (see reader.go for its guarantees).
package eventstream

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
)

// ErrMalformed is wrapped by every error of Decode: the entry is not a valid
// entry of the stream, and reading it again will not change that.
var ErrMalformed = errors.New("malformed stream entry")

// Stream is the contract of a stream of messages of type M. The zero value
// is not usable; get one from For or MatchFinished.
type Stream[M proto.Message] struct {
	key       string
	typeField string
	dataField string
	typ       string
}

// For returns the contract declared by the stream option of M's message.
// It fails when M has no such option or the option leaves a name empty.
func For[M proto.Message]() (Stream[M], error) {
	var zero M // a typed nil: generated messages reflect their descriptor even so
	desc := zero.ProtoReflect().Descriptor()
	opts, ok := proto.GetExtension(desc.Options(), eventsv1.E_Stream).(*eventsv1.StreamOptions)
	if !ok || opts == nil {
		return Stream[M]{}, fmt.Errorf("message %s has no stream option", desc.FullName())
	}
	s := Stream[M]{key: opts.GetKey(), typeField: opts.GetTypeField(), dataField: opts.GetDataField(), typ: string(desc.FullName())}
	if s.key == "" || s.typeField == "" || s.dataField == "" || s.typeField == s.dataField {
		return Stream[M]{}, fmt.Errorf("message %s: stream option %v needs a key and two distinct field names", desc.FullName(), opts)
	}
	return s, nil
}

// matchFinished is computed once: every caller gets the same read-only
// copy, and a missing option fails the first test that loads the package.
var matchFinished = must(For[*eventsv1.MatchFinished]())

// MatchFinished returns the contract of the stream of finished matches, which
// the match service publishes and the rating service consumes.
func MatchFinished() Stream[*eventsv1.MatchFinished] { return matchFinished }

var playerLinked = must(For[*eventsv1.PlayerLinked]())

// PlayerLinked returns the contract of the stream of guests linked to
// accounts, which the matchmaking service publishes (AuthService.LinkGuest)
// and the rating service consumes.
func PlayerLinked() Stream[*eventsv1.PlayerLinked] { return playerLinked }

var matchAbandoned = must(For[*eventsv1.MatchAbandoned]())

// MatchAbandoned returns the contract of the stream of matches aborted
// because a seat missed its first move, which the match service publishes
// and the matchmaking service consumes (it requeues the other players).
func MatchAbandoned() Stream[*eventsv1.MatchAbandoned] { return matchAbandoned }

func must[M proto.Message](s Stream[M], err error) Stream[M] {
	if err != nil {
		panic(err)
	}
	return s
}

// Key is the stream's default Redis key, before any deployment key prefix.
func (s Stream[M]) Key() string { return s.key }

// TypeField is the name of the entry field holding Type.
func (s Stream[M]) TypeField() string { return s.typeField }

// DataField is the name of the entry field holding the encoded message.
func (s Stream[M]) DataField() string { return s.dataField }

// Type is the value of the type field: M's full protobuf name.
func (s Stream[M]) Type() string { return s.typ }

// Fields returns the fields of the entry holding data, a message of type M
// in binary encoding, in the form XADD takes (type first).
func (s Stream[M]) Fields(data []byte) []any {
	return []any{s.typeField, s.typ, s.dataField, data}
}

// Encode returns the fields of the entry holding m. The encoding is
// deterministic, so one message always gives the same entry.
func (s Stream[M]) Encode(m M) ([]any, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", s.typ, err)
	}
	return s.Fields(data), nil
}

// Decode checks that the fields of an entry, as read from the stream, hold
// a message of type M and returns it. Fields other than the two of the
// contract are ignored. Errors wrap ErrMalformed.
func (s Stream[M]) Decode(values map[string]any) (M, error) {
	var zero M
	if typ, _ := values[s.typeField].(string); typ != s.typ {
		return zero, fmt.Errorf("%w: %s %q, want %q", ErrMalformed, s.typeField, typ, s.typ)
	}
	var data []byte
	switch v := values[s.dataField].(type) {
	case string: // as Redis replies
		data = []byte(v)
	case []byte: // as Fields builds
		data = v
	default:
		return zero, fmt.Errorf("%w: no %s field", ErrMalformed, s.dataField)
	}
	m := zero.ProtoReflect().Type().New().Interface().(M)
	if err := proto.Unmarshal(data, m); err != nil {
		return zero, fmt.Errorf("%w: decode %s: %v", ErrMalformed, s.typ, err)
	}
	return m, nil
}
