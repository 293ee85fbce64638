package imagetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/matchcheck"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/servicetls"
	"github.com/fourkingdoms/fourkingdoms/pkg/servicetls/tlstest"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// The image test needs podman, root and images built just before: the
// make target gives all three and sets this variable.
const enableVar = "FK_IMAGE_TEST"

// mount is where every container finds the test's keys and certificates.
const mount = "/etc/fourkingdoms"

// TestImagesPlayAGame starts Redis and the three services from their images
// (host network, loopback ports, read-only root, no capabilities, TLS on
// every gRPC port, public keys only for match and rating), waits until each
// is ready, lets four bots from the bots image play one whole game through
// them, then checks the finished match and that the rating service rated
// it: every player has one rated game, and the winner is rated above the
// last. The web image runs beside them, restricted alike: it must serve the
// committed web/dist (index.html for / and for a screen, the bundle).
func TestImagesPlayAGame(t *testing.T) {
	if os.Getenv(enableVar) != "1" {
		t.Skipf("run by make image-test (scripts/image-test.sh), which builds the images and sets %s=1", enableVar)
	}
	prefix := os.Getenv("IMAGE_PREFIX")
	if prefix == "" {
		prefix = "fourkingdoms"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	pod := &pod{t: t, ctx: ctx, prefix: prefix, run: fmt.Sprintf("fk-it-%d", os.Getpid())}

	// Files as the Secrets would mount them; the containers run as 65532.
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "image test CA")
	ca.Issue(t, dir, "tls", "localhost", "127.0.0.1")
	keys, err := auth.GenerateKeySet("image-test")
	if err != nil {
		t.Fatal(err)
	}
	signing, public := authtest.Files(t, keys)
	copyFile(t, ca.CAFile, filepath.Join(dir, "ca.crt"))
	copyFile(t, signing, filepath.Join(dir, "keys.json"))
	copyFile(t, public, filepath.Join(dir, "public-keys.json"))
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pod.volume = dir + ":" + mount + ":ro"

	redisPort := freePort(t)
	ports := map[string][2]int{}
	for _, svc := range []string{"rating", "match", "matchmaking"} {
		ports[svc] = [2]int{freePort(t), freePort(t)}
	}
	addr := func(svc string) string { return "localhost:" + strconv.Itoa(ports[svc][0]) }

	pod.start("redis", "redis-test", nil, "--port", strconv.Itoa(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	common := []string{
		"REDIS_ADDR=127.0.0.1:" + strconv.Itoa(redisPort), "LOG_LEVEL=warn",
		"TLS_CERT_FILE=" + mount + "/tls.crt", "TLS_KEY_FILE=" + mount + "/tls.key", "TLS_CA_FILE=" + mount + "/ca.crt",
	}
	for _, svc := range []string{"rating", "match", "matchmaking"} {
		keysFile := mount + "/public-keys.json"
		env := append([]string{
			"GRPC_ADDR=127.0.0.1:" + strconv.Itoa(ports[svc][0]), "ADMIN_ADDR=127.0.0.1:" + strconv.Itoa(ports[svc][1]),
		}, common...)
		if svc == "matchmaking" {
			keysFile = mount + "/keys.json" // the one service that mints tokens
			env = append(env, "MATCH_ADDR="+addr("match"), "RATING_ADDR="+addr("rating"), "MM_QUEUES=fourkingdoms 1+0")
		}
		if svc == "match" {
			env = append(env, "MATCH_KEEPER_INTERVAL=200ms")
		}
		pod.start(svc, svc, append(env, "AUTH_KEYS_FILE="+keysFile))
	}
	webPort := freePort(t)
	pod.start("web", "web", nil, "-addr", "127.0.0.1:"+strconv.Itoa(webPort))
	for _, svc := range []string{"rating", "match", "matchmaking"} {
		pod.waitReady(svc, ports[svc][1])
	}
	pod.checkWeb("web", webPort)

	// Four guests from the bots image: matched with each other, one game
	// each, then the container exits.
	bots := pod.start("bots", "bots", []string{
		"FK_MATCHMAKING_ADDR=" + addr("matchmaking"), "FK_MATCH_ADDR=" + addr("match"), "FK_RATING_ADDR=" + addr("rating"),
		"TLS_CA_FILE=" + mount + "/ca.crt",
	}, "--size", "4", "--games", "1", "--queues", "fourkingdoms/1+0", "--level", "greedy", "--think", "0s")
	pod.wait(bots)
	logs := pod.logs(bots)
	if strings.Contains(logs, matchcheck.ErrViolation.Error()) {
		t.Errorf("a bot saw the match event contract broken:\n%s", logs)
	}
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`msg="bot game over".* match=(\S+)`).FindAllStringSubmatch(logs, -1) {
		ids[m[1]] = true
	}
	if len(ids) != 1 {
		t.Fatalf("the four bots finished %d matches (%v), want one together:\n%s", len(ids), ids, logs)
	}
	var matchID string
	for id := range ids {
		matchID = id
	}

	// The test itself is a client too, over TLS with the same authority.
	tlsCfg, err := servicetls.Config{CAFile: ca.CAFile}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Endpoints{Matchmaking: addr("matchmaking"), Match: addr("match"), Rating: addr("rating"), TLS: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Login(ctx, "Image Test"); err != nil {
		t.Fatalf("guest login over TLS: %v", err)
	}
	got, err := c.Match.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: matchID})
	if err != nil {
		t.Fatalf("GetMatch %s: %v", matchID, err)
	}
	m := got.GetMatch()
	ranking := m.GetResult().GetRanking()
	if m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_FINISHED || len(ranking) != 4 || m.GetResult().GetTermination() == gamev1.Termination_TERMINATION_UNSPECIFIED {
		t.Fatalf("match %s: status %v, result %v: want finished with a ranking of four", matchID, m.GetStatus(), m.GetResult())
	}
	player := map[gamev1.Seat]string{}
	points := map[gamev1.Seat]int32{}
	for _, s := range m.GetSeats() {
		player[s.GetSeat()] = s.GetPlayer().GetPlayerId()
		points[s.GetSeat()] = s.GetResultPoints()
	}
	ratings := waitRated(t, ctx, c.Rating, player)
	first, last := ranking[0], ranking[3]
	t.Logf("match %s: ranking %v, ratings %v", matchID, ranking, ratings)
	if points[first] > points[last] && !(ratings[player[first]].GetMu() > ratings[player[last]].GetMu()) {
		t.Errorf("the winner (%v, %d points) is rated %v, not above the last (%v, %d points) at %v",
			first, points[first], ratings[player[first]].GetMu(), last, points[last], ratings[player[last]].GetMu())
	}
}

// waitRated waits until every player has one rated game: the rating
// service consumes finished matches asynchronously.
func waitRated(t *testing.T, ctx context.Context, rc ratingv1.RatingServiceClient, players map[gamev1.Seat]string) map[string]*ratingv1.Rating {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := map[string]*ratingv1.Rating{}
		var missing []string
		for _, id := range players {
			r, err := rc.GetRating(ctx, &ratingv1.GetRatingRequest{PlayerId: id, RuleSet: "fourkingdoms"})
			if err == nil && r.GetRating().GetGamesPlayed() == 1 && !r.GetRating().GetIsDefault() {
				got[id] = r.GetRating()
				continue
			}
			missing = append(missing, fmt.Sprintf("%s: %v %v", id, r.GetRating(), err))
		}
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute, not rated once: %v", missing)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// pod runs the test's containers, each named run-<name>, and removes them
// when the test ends (printing their logs if it failed).
type pod struct {
	t      *testing.T
	ctx    context.Context
	prefix string
	run    string // name prefix of this run's containers
	volume string
	names  []string
}

// podman runs podman with the machine's containers.conf (the caller's
// CONTAINERS_CONF, set by scripts/image-test.sh).
func (p *pod) podman(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(p.ctx, "podman", args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("podman %s: %w\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// start runs image as container name, detached, as a restricted pod would
// run it. It returns the container's name.
func (p *pod) start(name, image string, env []string, args ...string) string {
	p.t.Helper()
	full := p.run + "-" + name
	p.names = append(p.names, full)
	if len(p.names) == 1 {
		p.t.Cleanup(p.remove)
	}
	run := []string{"run", "--detach", "--name", full, "--network", "host",
		"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--volume", p.volume}
	for _, e := range env {
		run = append(run, "--env", e)
	}
	run = append(run, p.prefix+"/"+image+":latest")
	if _, err := p.podman(append(run, args...)...); err != nil {
		p.t.Fatal(err)
	}
	return full
}

// waitReady polls a service's /readyz until it answers 200, failing fast
// when its container exits.
func (p *pod) waitReady(name string, adminPort int) {
	p.t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(adminPort) + "/readyz"
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		if r, err := c.Get(url); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return
			}
		}
		state, _ := p.podman("inspect", "--format", "{{.State.Status}}", p.run+"-"+name)
		if s := strings.TrimSpace(state); s == "exited" || s == "stopped" {
			p.t.Fatalf("%s exited at start:\n%s", name, p.logs(p.run+"-"+name))
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s not ready after a minute:\n%s", name, p.logs(p.run+"-"+name))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// webDist is the committed web build, which the web image must serve as is.
const webDist = "../../../web/dist"

// checkWeb waits until the web container answers /, then checks that /, a
// screen of the app and its script bundle are the files of web/dist.
func (p *pod) checkWeb(name string, port int) {
	p.t.Helper()
	index, err := os.ReadFile(filepath.Join(webDist, "index.html"))
	if err != nil {
		p.t.Fatal(err)
	}
	bundles, err := filepath.Glob(filepath.Join(webDist, "assets", "app-*.js"))
	if err != nil || len(bundles) != 1 {
		p.t.Fatalf("web/dist/assets: app bundles %v (%v), want one", bundles, err)
	}
	bundle, err := os.ReadFile(bundles[0])
	if err != nil {
		p.t.Fatal(err)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	c := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (int, []byte, error) {
		r, err := c.Get(base + path)
		if err != nil {
			return 0, nil, err
		}
		defer r.Body.Close()
		body, err := io.ReadAll(r.Body)
		return r.StatusCode, body, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if code, _, err := get("/"); err == nil && code == http.StatusOK {
			break
		}
		state, _ := p.podman("inspect", "--format", "{{.State.Status}}", p.run+"-"+name)
		if s := strings.TrimSpace(state); s == "exited" || s == "stopped" {
			p.t.Fatalf("%s exited at start:\n%s", name, p.logs(p.run+"-"+name))
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: GET / not 200 after a minute:\n%s", name, p.logs(p.run+"-"+name))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, tc := range []struct {
		path string
		want []byte
	}{
		{"/", index},
		{"/watch/x", index},
		{"/assets/" + filepath.Base(bundles[0]), bundle},
	} {
		code, body, err := get(tc.path)
		if err != nil || code != http.StatusOK || !bytes.Equal(body, tc.want) {
			p.t.Errorf("%s: GET %s: status %d, %d bytes (%v); want 200 and the %d bytes of web/dist's file",
				name, tc.path, code, len(body), err, len(tc.want))
		}
	}
}

// wait waits for a container to exit and fails the test unless it exited 0.
func (p *pod) wait(name string) {
	p.t.Helper()
	out, err := p.podman("wait", name)
	if err != nil {
		p.t.Fatalf("%v\n%s", err, p.logs(name))
	}
	if code := strings.TrimSpace(out); code != "0" {
		p.t.Fatalf("%s exited with %s:\n%s", name, code, p.logs(name))
	}
}

func (p *pod) logs(name string) string {
	var out bytes.Buffer
	cmd := exec.Command("podman", "logs", name)
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	return out.String()
}

// remove stops and deletes every container of the run, even after a
// timeout of the test's context.
func (p *pod) remove() {
	if p.t.Failed() {
		for _, n := range p.names {
			p.t.Logf("logs of %s:\n%s", n, p.logs(n))
		}
	}
	args := append([]string{"rm", "--force", "--time", "5"}, p.names...)
	if out, err := exec.Command("podman", args...).CombinedOutput(); err != nil {
		p.t.Errorf("podman rm: %v\n%s", err, out)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// copyFile copies src to dst, readable by the containers' user.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
