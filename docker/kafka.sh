#!/usr/bin/env bash
# Run a real single-node Apache Kafka broker (KRaft, broker+controller) WITHOUT Docker.
#
# Kafka's own jars come from Maven Central via docker/kafka/pom.xml and stay cached in
# the local Maven repository (~/.m2), so only the first start downloads anything.
#
# Usage: docker/kafka.sh start|stop|status|logs|kill|resume|pause|unpause
#   start   resolve jars, write config, format fresh storage, start in the background, wait until
#           it answers; prints KAFKA_BROKERS=127.0.0.1:<port>. No-op if already running.
#   stop    stop the broker from the pid file and delete its data.
# For fault tests (the data directory is kept; nothing is formatted again):
#   kill [SIG]  send SIG (default TERM; KILL for a crash) and wait until the broker has exited.
#   resume      start the broker again on the storage the last start formatted, wait until it
#               answers; prints KAFKA_BROKERS=... No-op if already running.
#   pause       SIGSTOP: the broker hangs (its port still accepts connections) until unpause.
#   unpause     SIGCONT.
# Broker settings: auto.create.topics.enable=true, num.partitions=1, all replication factors 1,
# group.initial.rebalance.delay.ms=0. Needs a JDK 17+ (java + javac) and Maven.
#
# Environment (all optional):
#   KAFKA_PORT             client listener port on 127.0.0.1        (default 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller listener port            (default KAFKA_PORT+1)
#   KAFKA_HOME_DIR         config, data, log and pid file            (default ${TMPDIR:-/tmp}/kafka-local-$KAFKA_PORT)
#   KAFKA_VERSION          Kafka version to fetch                    (default: kafka.version in docker/kafka/pom.xml, 4.3.1)
#   KAFKA_HEAP_OPTS        broker JVM heap                           (default "-Xms256m -Xmx512m")
#   KAFKA_START_TIMEOUT    seconds to wait for the broker to answer  (default 180)
#   KAFKA_STOP_TIMEOUT     seconds to wait before SIGKILL on stop    (default 30)
#   KAFKA_AUTO_CREATE_TOPICS  auto.create.topics.enable              (default true, as in the apache/kafka image)
#   KAFKA_NUM_PARTITIONS   num.partitions for auto-created topics    (default 1)
#   JAVA                   java binary (default $JAVA_HOME/bin/java, else java on PATH)
#   MVN                    maven binary (default mvn); MVN_ARGS: extra maven arguments (e.g. -o)
set -Eeuo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
POM="$SCRIPT_DIR/kafka/pom.xml"

KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}"
KAFKA_HOME_DIR="${KAFKA_HOME_DIR:-${TMPDIR:-/tmp}/kafka-local-$KAFKA_PORT}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-180}"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
KAFKA_AUTO_CREATE_TOPICS="${KAFKA_AUTO_CREATE_TOPICS:-true}"
KAFKA_NUM_PARTITIONS="${KAFKA_NUM_PARTITIONS:-1}"
MVN="${MVN:-mvn}"
MVN_ARGS="${MVN_ARGS:-}"
if [[ -n "${JAVA:-}" ]]; then :
elif [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then JAVA="$JAVA_HOME/bin/java"
else JAVA=java
fi

BROKERS="127.0.0.1:$KAFKA_PORT"
DATA_DIR="$KAFKA_HOME_DIR/data"
CONFIG="$KAFKA_HOME_DIR/server.properties"
LOG4J_BROKER="$KAFKA_HOME_DIR/log4j2-broker.properties"
LOG4J_TOOLS="$KAFKA_HOME_DIR/log4j2-tools.properties"
LOG_FILE="$KAFKA_HOME_DIR/kafka.log"
PID_FILE="$KAFKA_HOME_DIR/kafka.pid"

log() { printf '[kafka.sh] %s\n' "$*" >&2; }
trap 'log "ERROR: unexpected failure (exit $?) at line $LINENO: $BASH_COMMAND"' ERR
die() { log "ERROR: $*"; exit 1; }

# --- process helpers -------------------------------------------------------------------

# Prints the pid from the pid file if that process is alive and is our broker.
running_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(tr -dc '0-9' < "$PID_FILE")"
  [[ -n "$pid" ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against pid reuse: the process must be kafka.Kafka with our config.
  if [[ -r "/proc/$pid/cmdline" ]]; then
    local cmd
    cmd="$(tr '\0' ' ' < "/proc/$pid/cmdline")"
    [[ "$cmd" == *kafka.Kafka*"$CONFIG"* ]] || return 1
  fi
  echo "$pid"
}

# SIGTERM (Kafka shuts down cleanly), SIGKILL after $2 seconds; returns once it is gone.
terminate() {
  local pid="$1" deadline=$((SECONDS + $2))
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null; do
    if (( SECONDS >= deadline )); then
      log "pid $pid still alive after ${2}s, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      deadline=$((SECONDS + 3600))
    fi
    sleep 0.2
  done
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

show_log_tail() {
  if [[ -f "$LOG_FILE" ]]; then
    log "last lines of $LOG_FILE:"
    tail -n "${1:-40}" "$LOG_FILE" >&2 || true
  fi
}

# --- classpath (Maven) -----------------------------------------------------------------

resolve_classpath() {
  command -v "$MVN" >/dev/null 2>&1 || die "maven ('$MVN') not found; install maven or set MVN"
  [[ -f "$POM" ]] || die "missing $POM"
  local version_arg="" key
  [[ -n "${KAFKA_VERSION:-}" ]] && version_arg="-Dkafka.version=$KAFKA_VERSION"
  # Cache key: pom content + requested version, so editing the pom re-resolves.
  key="$( { cat "$POM"; echo "${KAFKA_VERSION:-}"; } | sha256sum | cut -c1-16)"
  local cp_file="$KAFKA_HOME_DIR/classpath-$key.txt"

  if [[ -s "$cp_file" ]]; then
    local ok=1 jar jars=()
    # (the file has no trailing newline, so read returns 1 at EOF)
    IFS=':' read -r -a jars < "$cp_file" || true
    (( ${#jars[@]} > 0 )) || ok=0
    for jar in "${jars[@]}"; do [[ -f "$jar" ]] || { ok=0; break; }; done
    if (( ok )); then CLASSPATH_VALUE="$(cat "$cp_file")"; return 0; fi
  fi

  log "resolving Kafka ${KAFKA_VERSION:-(pom default)} jars with Maven (first run downloads from Maven Central)..."
  local mvn_out="$KAFKA_HOME_DIR/maven.log"
  # shellcheck disable=SC2086
  if ! "$MVN" -B -q -f "$POM" $MVN_ARGS $version_arg \
        dependency:build-classpath -Dmdep.includeScope=runtime \
        -Dmdep.outputFile="$cp_file.tmp" >"$mvn_out" 2>&1; then
    grep -m 1 'ERROR' "$mvn_out" | sed 's/\x1b\[[0-9;]*m//g' >&2 || tail -n 20 "$mvn_out" >&2 || true
    rm -f "$cp_file.tmp"
    die "maven could not resolve Kafka's jars (see $mvn_out)"
  fi
  mv "$cp_file.tmp" "$cp_file"
  CLASSPATH_VALUE="$(cat "$cp_file")"
  [[ "$CLASSPATH_VALUE" == *kafka_2.13-* ]] || die "resolved classpath has no kafka_2.13 jar: $cp_file"
}

# --- config ------------------------------------------------------------------------------

write_configs() {
  cat > "$CONFIG" <<EOF
# Generated by docker/kafka.sh — single-node KRaft broker for local development/tests.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$DATA_DIR

auto.create.topics.enable=$KAFKA_AUTO_CREATE_TOPICS
num.partitions=$KAFKA_NUM_PARTITIONS
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0

# small machine
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.retention.hours=24
EOF

  cat > "$LOG4J_BROKER" <<'EOF'
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
EOF

  cat > "$LOG4J_TOOLS" <<'EOF'
status = error
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = ERROR
rootLogger.appenderRef.err.ref = STDERR
EOF
}

random_cluster_id() {
  # Kafka cluster ids are 16 random bytes, base64url without padding (22 chars). One that starts
  # with "-" would be read by kafka-storage as an option (1 start in 64 failed so): draw again.
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ "$id" != -* ]] && break
  done
  printf '%s' "$id"
}

# KafkaReady.java (next to the pom) is compiled once against Kafka's jars and cached.
compile_ready_probe() {
  local src="$SCRIPT_DIR/kafka/KafkaReady.java" javac_bin key
  [[ -f "$src" ]] || die "missing $src"
  javac_bin="$(dirname "$(command -v "$JAVA")")/javac"
  [[ -x "$javac_bin" ]] || javac_bin="$(command -v javac || true)"
  [[ -n "$javac_bin" ]] || die "javac not found: a JDK (not just a JRE) is needed, e.g. apt-get install openjdk-17-jdk-headless"
  key="$( { cat "$src"; echo "$CLASSPATH_VALUE"; } | sha256sum | cut -c1-16)"
  READY_CLASSES="$KAFKA_HOME_DIR/ready-$key"
  [[ -f "$READY_CLASSES/KafkaReady.class" ]] && return 0
  rm -rf "$KAFKA_HOME_DIR"/ready-*
  mkdir -p "$READY_CLASSES"
  "$javac_bin" -nowarn -d "$READY_CLASSES" -cp "$CLASSPATH_VALUE" "$src" \
    || { rm -rf "$READY_CLASSES"; die "could not compile $src"; }
}

# --- commands ----------------------------------------------------------------------------

cmd_start() {
  local pid
  if pid="$(running_pid)"; then
    log "already running (pid $pid, home $KAFKA_HOME_DIR)"
    echo "KAFKA_BROKERS=$BROKERS"
    return 0
  fi
  rm -f "$PID_FILE"

  command -v "$JAVA" >/dev/null 2>&1 || die "java ('$JAVA') not found; install a JDK 17+ or set JAVA/JAVA_HOME"
  local p
  for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    port_open "$p" && die "port 127.0.0.1:$p is already in use (another Kafka? set KAFKA_PORT / KAFKA_CONTROLLER_PORT)"
  done

  local t0=$SECONDS
  mkdir -p "$KAFKA_HOME_DIR"
  resolve_classpath
  write_configs

  # Fresh storage every start: tests get an empty broker.
  rm -rf "$DATA_DIR"
  mkdir -p "$DATA_DIR"
  local cluster_id
  cluster_id="$(random_cluster_id)"
  log "formatting storage in $DATA_DIR (cluster id $cluster_id)"
  if ! "$JAVA" -Xmx256m -Dlog4j2.configurationFile="$LOG4J_TOOLS" -cp "$CLASSPATH_VALUE" \
        kafka.tools.StorageTool format -t "$cluster_id" -c "$CONFIG" >"$KAFKA_HOME_DIR/format.log" 2>&1; then
    cat "$KAFKA_HOME_DIR/format.log" >&2
    die "kafka.tools.StorageTool format failed"
  fi

  compile_ready_probe
  launch_and_wait "$t0"
}

# Starts kafka.Kafka on $CONFIG in the background and waits until it answers (KafkaReady).
launch_and_wait() {
  local t0="$1" pid
  log "starting broker on $BROKERS (controller 127.0.0.1:$KAFKA_CONTROLLER_PORT), log: $LOG_FILE"
  : > "$LOG_FILE"
  : > "$KAFKA_HOME_DIR/readiness.log"
  # shellcheck disable=SC2086
  nohup "$JAVA" $KAFKA_HEAP_OPTS \
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$LOG4J_BROKER" \
    -cp "$CLASSPATH_VALUE" kafka.Kafka "$CONFIG" \
    </dev/null >>"$LOG_FILE" 2>&1 &
  pid=$!
  echo "$pid" > "$PID_FILE"

  # Readiness: KafkaReady retries describeCluster until the broker answers, then warms the
  # group and transaction coordinators. Meanwhile watch that the broker is still alive.
  "$JAVA" -Xmx128m -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$LOG4J_TOOLS" \
    -cp "$READY_CLASSES:$CLASSPATH_VALUE" KafkaReady "$BROKERS" "$KAFKA_START_TIMEOUT" \
    </dev/null >/dev/null 2>"$KAFKA_HOME_DIR/readiness.log" &
  local ready_pid=$! ready_rc=0 deadline=$((SECONDS + KAFKA_START_TIMEOUT))
  while kill -0 "$ready_pid" 2>/dev/null; do
    if (( SECONDS >= deadline )); then
      kill "$ready_pid" 2>/dev/null || true
      break
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      kill "$ready_pid" 2>/dev/null || true
      wait "$ready_pid" 2>/dev/null || true
      rm -f "$PID_FILE"
      show_log_tail 60
      die "broker process exited during startup"
    fi
    sleep 0.3
  done
  wait "$ready_pid" || ready_rc=$?
  if (( ready_rc != 0 )); then
    show_log_tail 60
    log "readiness probe output:"; tail -n 20 "$KAFKA_HOME_DIR/readiness.log" >&2 || true
    log "stopping the unresponsive broker (pid $pid)"
    terminate "$pid" 10
    rm -f "$PID_FILE"
    die "broker did not become ready on $BROKERS within ${KAFKA_START_TIMEOUT}s"
  fi

  log "broker up (pid $pid) in $((SECONDS - t0))s"
  echo "KAFKA_BROKERS=$BROKERS"
}

cmd_stop() {
  local pid
  if pid="$(running_pid)"; then
    log "stopping broker (pid $pid)"
    terminate "$pid" "$KAFKA_STOP_TIMEOUT"
    log "stopped"
  else
    log "not running (no live broker for $PID_FILE)"
  fi
  rm -f "$PID_FILE"
  rm -rf "$DATA_DIR"
}

cmd_kill() {
  local signal="${1:-TERM}" pid
  pid="$(running_pid)" || die "not running (no live broker for $PID_FILE)"
  log "sending SIG$signal to broker (pid $pid); data kept in $DATA_DIR"
  kill -"$signal" "$pid"
  local deadline=$((SECONDS + KAFKA_STOP_TIMEOUT))
  while kill -0 "$pid" 2>/dev/null; do
    if (( SECONDS >= deadline )); then
      log "pid $pid still alive after ${KAFKA_STOP_TIMEOUT}s, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      deadline=$((SECONDS + 3600))
    fi
    sleep 0.1
  done
  rm -f "$PID_FILE"
  log "exited"
}

cmd_resume() {
  local pid
  if pid="$(running_pid)"; then
    log "already running (pid $pid, home $KAFKA_HOME_DIR)"
    echo "KAFKA_BROKERS=$BROKERS"
    return 0
  fi
  [[ -f "$DATA_DIR/meta.properties" && -f "$CONFIG" ]] || die "no formatted storage in $DATA_DIR to resume on (use start)"
  rm -f "$PID_FILE"
  command -v "$JAVA" >/dev/null 2>&1 || die "java ('$JAVA') not found; install a JDK 17+ or set JAVA/JAVA_HOME"
  local p
  for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    port_open "$p" && die "port 127.0.0.1:$p is already in use (another Kafka? set KAFKA_PORT / KAFKA_CONTROLLER_PORT)"
  done
  local t0=$SECONDS
  resolve_classpath
  compile_ready_probe
  launch_and_wait "$t0"
}

cmd_signal() {
  local pid
  pid="$(running_pid)" || die "not running (no live broker for $PID_FILE)"
  kill -"$1" "$pid"
  log "sent SIG$1 to broker (pid $pid)"
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    echo "running (pid $pid) KAFKA_BROKERS=$BROKERS home=$KAFKA_HOME_DIR"
  else
    echo "not running (home=$KAFKA_HOME_DIR)"
    exit 1
  fi
}

case "${1:-}" in
  start)  cmd_start ;;
  stop)   cmd_stop ;;
  status) cmd_status ;;
  logs)   [[ -f "$LOG_FILE" ]] && tail -n "${2:-100}" "$LOG_FILE" || die "no log at $LOG_FILE" ;;
  kill)    cmd_kill "${2:-TERM}" ;;
  resume)  cmd_resume ;;
  pause)   cmd_signal STOP ;;
  unpause) cmd_signal CONT ;;
  *)      echo "usage: $0 start|stop|status|logs [lines]|kill [signal]|resume|pause|unpause" >&2; exit 2 ;;
esac
