/**
 * Reading from a stream only while it is worth it. A client that sends
 * requests but never reads the answers would otherwise make the server buffer
 * answers without bound; a client that sends faster than the engine commits
 * would make it queue requests without bound. Either reason stops reading
 * from the stream (HTTP/2 flow control then pushes back on the client) until
 * both have cleared.
 */
/** The parts of a grpc-js server stream the gate uses. */
export interface GatedStream {
  write(message: never, onWritten?: (error?: Error | null) => void): boolean;
  pause(): unknown;
  resume(): unknown;
  once(event: 'drain', listener: () => void): unknown;
}

export class ReadGate {
  private answersBlocked = false;
  private requestsBlocked = false;
  private paused = false;

  constructor(private readonly stream: GatedStream) {}

  /** Writes an answer (`onWritten` once HTTP/2 took it); stops reading until the client has taken what is buffered. */
  write(message: unknown, onWritten?: (error?: Error | null) => void): void {
    if (this.stream.write(message as never, onWritten) || this.answersBlocked) return;
    this.answersBlocked = true;
    this.update();
    this.stream.once('drain', () => {
      this.answersBlocked = false;
      this.update();
    });
  }

  /** Stops or resumes reading for the caller's own reason (too many requests in flight). */
  setRequestsBlocked(blocked: boolean): void {
    this.requestsBlocked = blocked;
    this.update();
  }

  private update(): void {
    const shouldPause = this.answersBlocked || this.requestsBlocked;
    if (shouldPause && !this.paused) this.stream.pause();
    else if (!shouldPause && this.paused) this.stream.resume();
    this.paused = shouldPause;
  }
}
