export default function Training() {
  return (
    <section>
      <h1>Training</h1>
      <p className="muted">This page is being built.</p>
    </section>
  );
}
