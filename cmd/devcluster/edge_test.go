package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// checkEdge plays a browser's part through the edge, the one origin the
// banner names first: the web app's screens, a guest sign-in over Connect,
// a native gRPC client over cleartext HTTP/2 (queues, leaderboard, a ticket's
// stream into a match), and the match's stream over Connect, which must
// deliver its first item while the match is still going (an edge that
// buffered would deliver it only when the stream ends, after the match).
// An operator then aborts the match through the edge and the stream ends
// cleanly with the abort.
func (l *launched) checkEdge() {
	t := l.t
	t.Helper()
	out := l.out.String()
	browser, running := strings.LastIndex(out, "Play in your browser: "+l.cl.Web+"\n"), strings.LastIndex(out, "Four Kingdoms is running")
	if !strings.HasPrefix(l.cl.Web, "http://localhost:") || browser < 0 || browser > running {
		t.Errorf("the banner does not name the edge %q before anything else:\n%s", l.cl.Web, out)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}

	// A screen of the app, by link.
	resp, err := hc.Get(l.cl.Web + "/watch/0a0000000000000000000000")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case resp.Header.Get("Content-Type") != "text/html; charset=utf-8":
		t.Errorf("GET /watch/<id>: Content-Type %q, want HTML", resp.Header.Get("Content-Type"))
	case l.cl.WebBuilt && resp.StatusCode != http.StatusOK:
		t.Errorf("GET /watch/<id> with the web app built: %d, want its index.html", resp.StatusCode)
	case !l.cl.WebBuilt && (resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(page, []byte("make web"))):
		t.Errorf("GET /watch/<id> without the web app: %d %s, want a page saying how to build it", resp.StatusCode, page)
	}

	// Connect unary, as the web app signs in.
	var guest struct{ PlayerID, Token string }
	l.connectJSON(hc, "/fourkingdoms.auth.v1.AuthService/GuestLogin", "", `{"displayName":"Web Guest"}`, &guest)
	if guest.Token == "" {
		t.Fatal("GuestLogin through the edge returned no token")
	}

	// Native gRPC over h2c.
	cc, err := grpc.NewClient(strings.TrimPrefix(l.cl.Web, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.BearerToken(guest.Token, true)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	mm := matchmakingv1.NewMatchmakingServiceClient(cc)
	queues, err := mm.ListQueues(l.ctx, &matchmakingv1.ListQueuesRequest{})
	if err != nil || len(queues.GetQueues()) == 0 {
		t.Fatalf("ListQueues through the edge: %v %v", queues, err)
	}
	if _, err := ratingv1.NewRatingServiceClient(cc).GetLeaderboard(l.ctx, &ratingv1.GetLeaderboardRequest{RuleSet: ruleSet}); err != nil {
		t.Fatalf("GetLeaderboard through the edge: %v", err)
	}
	ticket, err := mm.Enqueue(l.ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/1+0"}})
	if err != nil {
		t.Fatalf("Enqueue through the edge: %v", err)
	}
	updates, err := mm.WatchTicket(l.ctx, &matchmakingv1.WatchTicketRequest{TicketId: ticket.GetTicket().GetTicketId()})
	if err != nil {
		t.Fatal(err)
	}
	var matchID string
	for matchID == "" {
		u, err := updates.Recv()
		if err != nil {
			t.Fatalf("WatchTicket through the edge: %v", err)
		}
		matchID = u.GetMatched().GetMatchId()
	}

	// The match's stream over Connect (HTTP/1.1, as a browser).
	req, _ := proto.Marshal(&matchv1.WatchMatchRequest{MatchId: matchID})
	frame := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(req))), req...)
	sreq, _ := http.NewRequestWithContext(l.ctx, http.MethodPost, l.cl.Web+"/fourkingdoms.match.v1.MatchService/WatchMatch", bytes.NewReader(frame))
	sreq.Header.Set("Content-Type", "application/connect+proto")
	sreq.Header.Set("Connect-Protocol-Version", "1")
	sreq.Header.Set("Authorization", "Bearer "+guest.Token)
	stream, err := hc.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("WatchMatch through the edge: %s", stream.Status)
	}
	items := bufio.NewReader(stream.Body)
	flags, payload := readEnvelope(t, items)
	var first matchv1.WatchMatchResponse
	if err := proto.Unmarshal(payload, &first); flags != 0 || err != nil || first.GetSnapshot() == nil {
		t.Fatalf("first item of WatchMatch: flags %#x, %v, %v; want the snapshot", flags, &first, err)
	}
	now, err := matchv1.NewMatchServiceClient(cc).GetMatch(l.ctx, &matchv1.GetMatchRequest{MatchId: matchID})
	if err != nil || now.GetMatch().GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ACTIVE {
		t.Fatalf("after the stream's first item the match is %v (%v): the edge delivered it only at the stream's end", now.GetMatch().GetStatus(), err)
	}

	// An operator ends the match through the edge (Connect JSON).
	keys, err := auth.LoadFile(l.cl.KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	op, _, err := keys.Sign(auth.Identity{Subject: "e2e-operator", Role: auth.RoleOperator}, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	l.connectJSON(hc, "/fourkingdoms.match.v1.MatchService/AbortMatch", op, `{"matchId":"`+matchID+`","reason":"edge test"}`, nil)
	var last matchv1.WatchMatchResponse
	for {
		flags, payload := readEnvelope(t, items)
		if flags&0x02 != 0 { // the end of the stream: {} or an error
			var end struct{ Error json.RawMessage }
			if err := json.Unmarshal(payload, &end); err != nil || end.Error != nil {
				t.Errorf("WatchMatch ended with %s, want a clean end", payload)
			}
			break
		}
		last.Reset()
		if err := proto.Unmarshal(payload, &last); err != nil {
			t.Fatal(err)
		}
	}
	if last.GetEvent().GetMatchAborted() == nil {
		t.Errorf("last item of WatchMatch = %v, want the abort", &last)
	}
}

// connectJSON makes a Connect unary call with a JSON body through the edge
// and decodes the answer into out (nil: ignore it).
func (l *launched) connectJSON(hc *http.Client, path, token, body string, out any) {
	l.t.Helper()
	req, _ := http.NewRequestWithContext(l.ctx, http.MethodPost, l.cl.Web+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 {
		l.t.Fatalf("%s through the edge: %s %s %s", path, resp.Proto, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			l.t.Fatalf("%s: %v in %s", path, err, b)
		}
	}
}

// readEnvelope reads one message of Connect's streaming envelope: a flags
// byte, a 4-byte length and the payload.
func readEnvelope(t testing.TB, r *bufio.Reader) (byte, []byte) {
	t.Helper()
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		t.Fatalf("stream: %v", err)
	}
	p := make([]byte, binary.BigEndian.Uint32(head[1:]))
	if _, err := io.ReadFull(r, p); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return head[0], p
}
