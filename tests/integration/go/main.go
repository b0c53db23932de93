// sarama_produce: produces records with IBM/sarama's SyncProducer, as a Go application
// does, for tests/integration/test_batch_header.py. One line of JSON per record on stdout
// ({"partition":P,"offset":O}); an error goes to stderr with exit status 1.
//
// Built twice: here against sarama v1.61.1, and in sarama-1.44/ (this file, linked)
// against v1.44.0, the last release that leaves every batch's max_timestamp at -1
// (v1.45.0 computes it from the records).
//
// With -base-ms the records' timestamps are base + 0.9 ms + i * 0.3 ms: several records
// to a millisecond, all in one batch, which sarama truncates to milliseconds.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/IBM/sarama"
)

func main() {
	brokers := flag.String("brokers", "", "bootstrap address HOST:PORT")
	topic := flag.String("topic", "", "topic to produce to (partition 0)")
	n := flag.Int("n", 10, "records to produce, in one batch")
	baseMs := flag.Int64("base-ms", 0, "timestamp base in ms; 0: sarama's own (now)")
	acks := flag.Int("acks", 1, "required acks: -1, 0 or 1")
	flag.Parse()
	if *brokers == "" || *topic == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: sarama_produce -brokers HOST:PORT -topic T [-n N] [-base-ms MS] [-acks A]")
		os.Exit(2)
	}

	cfg := sarama.NewConfig() // sarama's defaults otherwise (protocol version 2.8)
	cfg.ClientID = "sluice-it-sarama"
	cfg.Producer.RequiredAcks = sarama.RequiredAcks(*acks)
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	// All records in one batch: sent once n are queued (or after a second).
	cfg.Producer.Flush.Messages = *n
	cfg.Producer.Flush.Frequency = time.Second
	cfg.Producer.Timeout = 10 * time.Second
	cfg.Net.DialTimeout = 10 * time.Second

	p, err := sarama.NewSyncProducer([]string{*brokers}, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	defer p.Close()

	msgs := make([]*sarama.ProducerMessage, *n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{
			Topic:     *topic,
			Partition: 0,
			Key:       sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("v%d-sarama", i)),
			Headers:   []sarama.RecordHeader{{Key: []byte("i"), Value: []byte(fmt.Sprint(i))}},
		}
		if *baseMs != 0 {
			ns := *baseMs*int64(time.Millisecond) + 900*int64(time.Microsecond) +
				int64(i)*300*int64(time.Microsecond)
			msgs[i].Timestamp = time.Unix(0, ns)
		}
	}
	if err := p.SendMessages(msgs); err != nil {
		fmt.Fprintln(os.Stderr, "produce:", err)
		os.Exit(1)
	}
	out := json.NewEncoder(os.Stdout)
	for _, m := range msgs {
		_ = out.Encode(map[string]int64{"partition": int64(m.Partition), "offset": m.Offset})
	}
}
