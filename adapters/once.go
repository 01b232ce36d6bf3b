package adapters

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// sendOnce sends req with client so that the limiter sees it at most once
// for each time the grader records it.
//
// Go's http.Transport sends a request again by itself when a reused
// connection fails after the request was written, if it deems the request
// replayable: a GET, HEAD, OPTIONS or TRACE without a body (or one it can
// rewind with GetBody), or any request with an Idempotency-Key header
// (golang/go#48438); its HTTP/2 side replays a request it can rewind on
// some stream errors. A limiter behind a connection that resets then
// counts two requests where the grader recorded one, and a correct limiter
// is judged to have admitted one too many. sendOnce takes the replay away
// as http.Transport documents it: a request without a body gets one that
// is empty and cannot be rewound (no GetBody), which goes on the wire as no
// body at all. A request with a body is left as it is: the transport sends
// it again only when not a byte of it was written (HTTP/1) or when the
// server refused it unprocessed (HTTP/2), which no limiter counted.
//
// And sendOnce counts the times the request was written in full: should a
// transport send it twice all the same, the answer is not trusted: the
// call fails, and its caller reports it as a call without an answer
// ([contract.ErrNoAnswer]: its outcome is unknown), as it does any error of
// the transport.
func sendOnce(client *http.Client, req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		req.Body, req.ContentLength, req.GetBody = noBytes{}, 0, nil
	}
	var writes atomic.Int32
	trace := &httptrace.ClientTrace{WroteRequest: func(w httptrace.WroteRequestInfo) {
		if w.Err == nil {
			writes.Add(1)
		}
	}}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := client.Do(req)
	if n := writes.Load(); n > 1 {
		if err == nil {
			resp.Body.Close()
		}
		return nil, fmt.Errorf("the HTTP transport sent the request %d times (a connection failed under it): the limiter may have counted each", n)
	}
	return resp, err
}

// noBytes is a request body of no bytes that cannot be rewound: a request
// carrying it is never replayed by http.Transport, and is sent without a
// body (the transport finds it empty before writing the headers).
type noBytes struct{}

func (noBytes) Read([]byte) (int, error) { return 0, io.EOF }
func (noBytes) Close() error             { return nil }
