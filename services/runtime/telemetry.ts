/**
 * Traces for one process: exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set, off
 * otherwise (README, Traces). Metrics need no start: the registry collects from the first import.
 */
import type { Logger } from 'pino';
import type { Config } from '../../shared/config.ts';
import { startTracing } from '../../shared/observability/tracing.ts';

export interface Telemetry {
  stop(): Promise<void>;
}

export const startTelemetry = async (config: Config, processName: string, logger: Logger): Promise<Telemetry> => {
  if (!config.otelExporterOtlpEndpoint) return { stop: async () => undefined };
  const serviceName = config.otelServiceName ?? `call-ingestion-${processName}`;
  const tracing = await startTracing(config.otelExporterOtlpEndpoint, serviceName);
  logger.info({ endpoint: config.otelExporterOtlpEndpoint, serviceName }, 'exporting traces over OTLP/HTTP');
  return {
    stop: () =>
      tracing
        .shutdown()
        .catch((error: unknown) => logger.warn({ err: error }, 'the last traces could not be exported')),
  };
};
