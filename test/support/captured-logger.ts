/**
 * A real service logger (the same redaction and format as in production) whose lines are kept, so a
 * test can read what reached the log: each line parsed, and as the text written.
 */
import { createLogger, type Logger } from '../../shared/logger.js';

/** One log line as JSON: pino's fields and the line's own. */
export interface LogLine {
  msg?: string;
  level?: number;
  [field: string]: unknown;
}

/**
 * @example
 * const { logger, lines } = capturedLogger('tenancy-test');
 * // … run the code under test with `logger` …
 * t.ok(lines.some((line) => line.msg === 'start failed'));
 */
export function capturedLogger(service: string, level = 'info'): { logger: Logger; lines: LogLine[]; text: string[] } {
  const lines: LogLine[] = [];
  const text: string[] = [];
  const logger = createLogger(service, {
    level,
    destination: {
      write: (line: string) => {
        text.push(line);
        lines.push(JSON.parse(line) as LogLine);
      },
    },
  });
  return { logger, lines, text };
}
