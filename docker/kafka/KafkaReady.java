import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Used by docker/kafka.sh: waits until the broker answers real requests, then warms the
 * group coordinator (__consumer_offsets) and the transaction coordinator / producer-id
 * manager, so the first consumer group or idempotent producer of a test does not get
 * "coordinator is loading" / "coordinator not available" errors.
 *
 * Usage: java -cp classes:kafka-jars KafkaReady host:port timeoutSeconds
 */
public final class KafkaReady {

  interface Step {
    void run() throws Exception;
  }

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[1]));

    Properties common = new Properties();
    common.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    common.put(AdminClientConfig.CLIENT_ID_CONFIG, "kafka-sh-ready");
    common.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
    common.put(AdminClientConfig.SOCKET_CONNECTION_SETUP_TIMEOUT_MS_CONFIG, "500");
    common.put(AdminClientConfig.SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS_CONFIG, "1000");

    Properties adminProps = new Properties();
    adminProps.putAll(common);
    adminProps.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000");
    adminProps.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");

    try (Admin admin = Admin.create(adminProps)) {
      retry(deadline, "describeCluster", () -> {
        if (admin.describeCluster().nodes().get(5, TimeUnit.SECONDS).isEmpty()) {
          throw new IllegalStateException("no broker registered yet");
        }
      });
      // FindCoordinator(GROUP) creates __consumer_offsets; the call succeeds once it is loaded.
      retry(deadline, "group coordinator", () ->
          admin.listConsumerGroupOffsets("kafka-sh-warmup").partitionsToOffsetAndMetadata()
              .get(5, TimeUnit.SECONDS));
    }

    Properties producerProps = new Properties();
    producerProps.putAll(common);
    producerProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "kafka-sh-warmup");
    producerProps.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
    producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    // InitProducerId: creates __transaction_state and gets the first producer-id block.
    retry(deadline, "transaction coordinator", () -> {
      try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps)) {
        producer.initTransactions();
      }
    });
  }

  private static void retry(long deadline, String what, Step step) throws Exception {
    while (true) {
      try {
        step.run();
        return;
      } catch (Exception e) {
        if (System.nanoTime() >= deadline) {
          System.err.println("KafkaReady: " + what + " failed: " + e);
          System.exit(1);
        }
        Thread.sleep(300);
      }
    }
  }
}
