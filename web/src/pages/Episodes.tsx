export default function Episodes() {
  return (
    <section>
      <h1>Episodes</h1>
      <p className="muted">This page is being built.</p>
    </section>
  );
}
