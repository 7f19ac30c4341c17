export default function Evaluations() {
  return (
    <section>
      <h1>Evaluations</h1>
      <p className="muted">This page is being built.</p>
    </section>
  );
}
