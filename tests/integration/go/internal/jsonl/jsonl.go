// Package jsonl is how the test programs of this module report: one JSON object per
// line on stdout, its "kind" naming what it says, read by the pytest files.
package jsonl

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"sync"
	"time"
)

var out = json.NewEncoder(os.Stdout)

// Emit prints fields with "kind" set to kind.
func Emit(kind string, fields map[string]any) {
	fields["kind"] = kind
	if err := out.Encode(fields); err != nil {
		panic(err)
	}
}

// Fail reports what failed and exits 1.
func Fail(what string, err error) {
	Emit("error", map[string]any{"what": what, "error": err.Error()})
	os.Exit(1)
}

// Err is err's text, or nil (JSON null) when there is none.
func Err(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}

// Args are the flags every test program of this module takes.
type Args struct {
	Bootstrap, Topic, Group string
	Brokers                 []string // Bootstrap's HOST:PORT list (one broker, or a cluster's)
	Partitions, PerCodec    int
}

// Start parses the command line (perCodec is the default of -per-codec) and gives the
// run's context, which ends after 150 s.
func Start(perCodec int) (Args, context.Context, context.CancelFunc) {
	var a Args
	flag.StringVar(&a.Bootstrap, "bootstrap", "", "host:port[,host:port...]")
	flag.StringVar(&a.Topic, "topic", "", "topic to create and use")
	flag.IntVar(&a.Partitions, "partitions", 3, "partitions of the topic")
	flag.IntVar(&a.PerCodec, "per-codec", perCodec, "records per codec")
	flag.StringVar(&a.Group, "group", "", "consumer group id")
	flag.Parse()
	a.Brokers = strings.Split(a.Bootstrap, ",")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	return a, ctx, cancel
}

// WaitFor polls count (under mu) until it reaches want or timeout passes.
func WaitFor(mu *sync.Mutex, count func() int, want int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := count()
		mu.Unlock()
		if n >= want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Rec is a record as the programs report it.
type Rec struct {
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Key       string            `json:"key"`
	Value     string            `json:"value"`
	Headers   map[string]string `json:"headers"`
}
