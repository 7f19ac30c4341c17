export default function Play() {
  return (
    <section>
      <h1>Play</h1>
      <p className="muted">This page is being built.</p>
    </section>
  );
}
